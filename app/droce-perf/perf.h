/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PERF_H
#define PERF_H

/*
 * droce-perf: a testpmd-style RoCEv2 traffic generator that embeds droce engines (no
 * droced). Two hosts, a and b, each a device with one engine on one port, live in this
 * process: over an internal net_ring pair when the EAL line gives no port, or on ports 0
 * and 1 of whatever the EAL line gives (net_memif server and client, net_af_packet on a
 * veth pair, a NIC pair). The main lcore runs both hosts' applications and polls both
 * engines (droce_engine_poll()), as an application linking the engine in-process does;
 * with -i or --stats-period the first worker lcore does, the main lcore in control. With
 * two lcores and neither, host b runs on the first worker lcore (its application and its
 * engines), host a on the main lcore (perf_lcores.c): in RC send, write, read, atomic,
 * lat and the raw modes.
 * With --server or --client and one port on the EAL line, this process is one host and
 * its peer another process (droce-perf or an unmodified perftest) met over perftest's
 * out-of-band TCP exchange: the client is host a, which sends, the server host b.
 *
 * Files by role: perf_main.c (EAL, ports, hosts, the run), perf_opts.c (options, --help),
 * perf_traffic.c (send, write, read, atomic, lat), perf_rdma.c (the work requests and
 * checks of write, read and atomic), perf_ud.c (UD: address handles, Q_Key),
 * perf_fault.c (the fault driver's loss options and counters), perf_raw.c (raw-tx,
 * raw-rx, raw-io), perf_report.c (perftest's tables, --json lines, port statistics),
 * perf_control.c (a run on a worker lcore, the main lcore printing --stats-period's
 * statistics or reading -i's commands), perf_prompt.c (-i's prompt, on DPDK's cmdline
 * library), perf_peer.c (the peer in another process: its out-of-band exchange in
 * perftest's order, ARP), perf_oob.c (perftest's out-of-band messages).
 */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rte_common.h>
#include <rte_launch.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <droce_engine.h>
#include <droce_engine_region.h>
#include <droce_fault.h>
#include <droce_net.h>
#include <droce_shm.h>
#include <droce_shm_arena.h>
#include <droce_shm_client.h>

#define PERF_MIN_SIZE		1u
#define PERF_MAX_SIZE		(1u << 20)
#define PERF_MAX_QPS		10000u
/* --burst: WRs per post call (raw: frames per tx burst), at most the post arrays' length. */
#define PERF_MAX_BURST		32u
/*
 * An engine has DROCE_SHM_DB_SLOTS (4096) doorbell slots per domain: a host has as many
 * engines as its QPs need, each on its own rx and tx queue of the port, QP i on engine
 * i % engines; the host's lcore polls them all.
 */
#define PERF_MAX_ENGINES	((PERF_MAX_QPS + DROCE_SHM_DB_SLOTS - 1) / DROCE_SHM_DB_SLOTS)
/*
 * atomic: QP i operates on 8-byte word i mod PERF_ATOMIC_WORDS of host b's buffer (its
 * first 8 KiB); CMP_AND_SWAP chains need a word of their own per QP, so at most this many.
 */
#define PERF_ATOMIC_SIZE	8u
/* --bottleneck's fault driver keys (rate=...,buffer=...), as droce_fault_attach takes. */
#define PERF_BN_ARGS_LEN	192
#define PERF_ATOMIC_WORDS	1024u

enum perf_mode {
	PERF_MODE_SEND,
	PERF_MODE_WRITE,
	PERF_MODE_READ,
	PERF_MODE_ATOMIC,
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
	uint8_t qp_type;		/* DROCE_SHM_QPT_RC, _UC or _UD */
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t qp_timeout;		/* -u: the local ACK timeout's exponent; 0 the default */
	bool json;
	bool atomic_cas;		/* atomic: CMP_AND_SWAP, else FETCH_AND_ADD */
	bool ipv6;			/* IPv6 GIDs: RoCEv2 over IPv6 */
	struct perf_fault_opts {
		/* parts per million of the packets each host's port receives */
		uint32_t drop, reorder, dup, corrupt;
		uint64_t seed;
		bool on;		/* any rate given: attach the fault driver */
	} fault;
	uint32_t burst;			/* WRs per post call (raw: frames per tx burst) */
	double rate;			/* --rate per QP: messages (frames) per s, 0 none */
	bool rate_bits;			/* rate is payload bits (raw: frame bits) per s */
	bool interactive;		/* -i: the prompt */
	bool auto_start;		/* --auto-start: a run at once (with -i too) */
	uint32_t stats_period;		/* --stats-period: port statistics every N s, 0 none */
	enum perf_role role;
	const char *peer;		/* --client's host */
	uint16_t tcp_port;		/* the out-of-band exchange's */
	uint32_t ipv4;			/* host order; 0: 192.0.2.<host id> */
	uint8_t ipv4_prefix_len;
	/* Congestion (perf_cc.c, doc/congestion.md). */
	struct perf_cc_opts {
		struct droce_cc_params params;	/* both hosts' engines: --cc, --dcqcn */
		char bottleneck[PERF_BN_ARGS_LEN];	/* --bottleneck: b's port; "" none */
		uint32_t a_engines;		/* --engines: host a's; 0: one per 4096 QPs */
		uint32_t sample_ms;		/* --per-qp's sample period; 0: no per-QP report */
	} cc;
};

/*
 * The largest message of a run of o: its size, or with -a the largest power of two (UD:
 * one packet a message, IB 9.8.3, so -a ends at the MTU).
 */
static inline uint32_t
perf_largest_size(const struct perf_opts *o)
{
	if (!o->all_sizes)
		return o->size;
	return o->qp_type == DROCE_SHM_QPT_UD ? 128u << o->mtu : PERF_MAX_SIZE;
}

/* perf_opts.c: the options after EAL's "--". 0, or -1 after printing why; 1 for --help. */
int perf_opts_parse(int argc, char **argv, struct perf_opts *o);
void perf_usage(const char *prog);
/* The rules that tie options together; the prompt's start applies them too. 0 or -1. */
int perf_opts_check(const struct perf_opts *o);
/* One option's value, with the command line's message when it is bad: 0 or -1. */
int perf_opt_mode(const char *s, enum perf_mode *m);
int perf_opt_size(const char *s, uint32_t *size);
int perf_opt_qps(const char *s, uint32_t *qps);
int perf_opt_burst(const char *s, uint32_t *burst);
int perf_opt_rate(const char *s, double *rate, bool *bits);

/*
 * Messages (raw: frames) per second per QP that --rate allows at message size bytes
 * (raw: frames of bytes), 0 for no limit.
 */
static inline double
perf_rate_msgs(const struct perf_opts *o, uint32_t bytes)
{
	return o->rate_bits ? o->rate / (8.0 * bytes) : o->rate;
}

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
	bool queued;			/* in its host's ready ring */
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
	/*
	 * The sums of the QPs' done and rdone, kept as they change, and the sender's QPs that
	 * may have room to post, each at most once (perf_traffic.c): with 10,000 QPs, a pass
	 * over all of them cost more than the engines' work.
	 */
	uint64_t done_sum, rdone_sum;
	uint32_t *ready;
	uint32_t ready_head, ready_count;
	uint32_t *qpns;
	struct perf_qp **by_qpn;	/* max_qps entries */
	uint32_t max_qps;
	uint32_t psn;
	/* UD (perf_ud.c): the address handle towards the peer, the Q_Key of both ends */
	struct ibv_ah ah;
	bool have_ah;
	uint32_t qkey;
	struct droce_fault *fault;	/* the loss options on this port's receive path */
	/* Alone (perf_peer.c): ARP and ICMP through the engines' slow path; else NULL. */
	struct droce_net *net;
	struct rte_ring *slow_rx, *slow_tx;
	uint64_t net_tick, net_tick_cycles;	/* lib/net's timer: last run, period */
};

/*
 * Host b on its own lcore (perf_lcores.c): what the main lcore (host a) and the worker
 * (host b) tell each other during a round. Each field has one writer; the flags are
 * release stores read with acquire loads, so what was written before a flag is seen
 * after it. b's fields are on their own cache line: a's lcore reads them, never writes.
 */
struct perf_split {
	bool a_done;		/* main: host a's part of the round is over, its counts final */
	bool quit;		/* main: the round ends (or failed): the worker returns */
	uint64_t b_count __rte_cache_aligned;	/* worker: b's progress (messages, frames) */
	uint64_t b_count2;	/* worker, raw-io: frames b sent back */
	bool b_done;		/* worker: host b's part is over, its counts final */
	bool b_failed;		/* worker: its part failed (after printing why) */
};

struct perf_run {
	const struct perf_opts *o;
	struct perf_host a, b;
	uint32_t max_size;		/* the largest size of the run: buffer slots */
	struct perf_peer peer_b;	/* what host a knows of host b: WRITEs' target */
	/* atomic (perf_rdma.c): b's words before the round; the next compare, word by word */
	uint64_t words0[PERF_ATOMIC_WORDS];
	uint64_t cas_next[PERF_ATOMIC_WORDS];
	uint32_t nb_words;
	struct droce_engine_stats a0;	/* host a's counters at the start of the round */
	struct droce_fault_stats fb0;	/* host b's fault counters at the start of the round */
	/*
	 * Set by the prompt's stop, quit and by SIGINT/SIGTERM (any thread, relaxed: the run
	 * only needs to see it soon); the traffic loops end there as at the end of -D.
	 */
	bool stop;
	bool interrupted;		/* SIGINT or SIGTERM: the prompt quits too */
	struct perf_opts opened;	/* the options the hosts were set up for */
	bool broken;			/* a run failed: the hosts are set up again */
	struct perf_remote *remote;	/* the peer process (perf_peer.c); NULL: both here */
	/*
	 * The lcores that run host a and host b: the main lcore; with -i or --stats-period
	 * the first worker for both; with two lcores and neither, b on the first worker.
	 */
	unsigned int a_lcore, b_lcore;
	struct perf_split split;
	uint8_t peer_mac[6];		/* raw modes with a peer process: its MAC */
	struct perf_cc_samples *samples;	/* --per-qp's time series (perf_cc.c); or NULL */
};

static inline bool
perf_run_stopping(const struct perf_run *r)
{
	return __atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

/*
 * perf_lcores.c: whether this round runs host b on b_lcore, its own: RC (UC and UD lose
 * what a port refuses while the other lcore is off its CPU, and their round ends on both
 * hosts' counters at once) and no loss options, or a raw mode.
 */
bool perf_run_splits(const struct perf_run *r);
/* The worker of a split round launched on b_lcore (the flags cleared), and joined. */
int perf_split_launch(struct perf_run *r, lcore_function_t *fn, void *arg);
int perf_split_join(struct perf_run *r);

static inline bool
perf_split_flag(const bool *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static inline void
perf_split_set(bool *f)
{
	__atomic_store_n(f, true, __ATOMIC_RELEASE);
}

/* Port counts at a moment: testpmd's "since last show" rates start there. */
struct perf_port_mark {
	uint64_t tsc, ipackets, opackets, ibytes, obytes;
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
	uint64_t lost;			/* UC, UD under loss: sent - received */
	uint64_t retransmits;		/* host a's request packets sent again */
	bool sent_known, received_known;	/* false: the other process's, not told */
	/*
	 * Raw modes with a peer process: sent is the client's frames, received the server's
	 * (raw-io: those back at the client); the server's own counts besides.
	 */
	uint64_t server_rx, server_fwd;
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
/* perf_main.c: every size of a run (one, or -a's), figures printed. 0, or -1 failed. */
int perf_run_sizes(struct perf_run *r);
/*
 * perf_main.c: hosts fit for r->o (the prompt's next start): kept when they are, closed
 * and opened again when r->o changed what they were set up for. 0, or -1 after a message.
 */
int perf_hosts_fit(struct perf_run *r);

/*
 * perf_control.c: a run on the first worker lcore, controlled from the main lcore (-i,
 * --stats-period). launch checks the settings (next), copies them (active, r->o while
 * the run goes), fits the hosts to them and prints the header; join waits for the worker
 * and prints the footer and the ports' statistics; stop sets r->stop and joins.
 */
/* How often the main lcore looks at the worker and at signals while it waits. */
#define PERF_WATCH_MS		100

struct perf_control {
	struct perf_run *r;
	struct perf_opts *next;		/* the settings: the prompt's set changes them */
	struct perf_opts active;	/* the run's */
	unsigned int worker;
	bool launched;			/* a run launched and not yet joined */
	bool finished;			/* the worker's run returned (release, by the worker) */
	struct perf_port_mark mark[2];	/* "since last show": from the launch or last show */
};
void perf_control_init(struct perf_control *c, struct perf_run *r, struct perf_opts *next);
int perf_control_launch(struct perf_control *c);
bool perf_control_finished(const struct perf_control *c);
int perf_control_join(struct perf_control *c);
int perf_control_stop(struct perf_control *c);
/* --stats-period without -i: the run, the ports' statistics every period. Exit status. */
int perf_periodic(struct perf_run *r, struct perf_opts *o);
/* perf_prompt.c: -i's prompt until quit, the end of the input or a signal. Exit status. */
int perf_prompt(struct perf_run *r, struct perf_opts *o);

/* perf_peer.c: the peer in another process, in the order its perftest test speaks. */
int perf_peer_open(struct perf_run *r, struct perf_host *h, struct perf_opts *o);
int perf_peer_exchange(struct perf_run *r, struct perf_host *h, struct perf_peer *p);
int perf_peer_connected(struct perf_run *r);
int perf_peer_run_start(struct perf_run *r);
int perf_peer_run_end(struct perf_run *r, struct perf_bw *f);
bool perf_peer_end_ready(struct perf_run *r);
/*
 * The raw modes with a peer process: droce-perf's own exchange on perftest's connection
 * (a perftest peer has no raw mode). After perf_peer_open: a hello each way (mode, size,
 * MAC) in open; the start barrier; then reports, the client's first, each answered.
 */
struct perf_raw_report {
	uint64_t tx;		/* the client: frames sent */
	uint64_t back;		/* the client, raw-io: frames that came back */
	uint64_t rx, fwd;	/* the server: frames received, sent back (raw-io) */
	uint64_t ns;		/* the client: its time transmitting */
	double peak_gbps;	/* the sender's best window of what it counts */
};
int perf_peer_raw_start(struct perf_run *r);
int perf_peer_raw_send(struct perf_run *r, const struct perf_raw_report *m);
/* The peer's next report; idle (NULL: none) runs while it waits. */
int perf_peer_raw_recv(struct perf_run *r, struct perf_raw_report *m, void (*idle)(void *),
		       void *arg);
int perf_peer_close(struct perf_run *r);
void perf_peer_free(struct perf_run *r);
void perf_peer_host_release(struct perf_host *h);
void perf_peer_slow_poll(struct perf_host *h);
const char *perf_peer_name(const struct perf_run *r);

/* perf_traffic.c */
int perf_traffic_run(struct perf_run *r, uint32_t size);

/* perf_rdma.c: write, read and atomic, the work request of a's QP q and the checks. */
void perf_rdma_wr(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr,
		  struct ibv_sge *sge, const struct perf_peer *peer, uint64_t remote);
uint64_t perf_rdma_delivered(const struct perf_run *r, const struct droce_engine_stats *b0,
			     const struct droce_engine_stats *b1, uint32_t size, uint64_t sent);
void perf_rdma_prepare(struct perf_run *r);
int perf_rdma_check(struct perf_run *r, const struct droce_engine_stats *b0,
		    const struct droce_engine_stats *b1, uint64_t sent, uint32_t size);
uint32_t perf_mr_access(void);

/* perf_ud.c: UD QPs, one address handle per engine towards the peer. */
int perf_ud_connect(struct perf_host *h, const struct perf_peer *p, uint32_t pd);
bool perf_ud_ah_valid(const struct perf_host *h, uint32_t ah);
void perf_ud_wr(const struct perf_run *r, const struct perf_qp *q, struct ibv_send_wr *wr,
		const struct perf_peer *peer);
uint32_t perf_recv_room(const struct perf_opts *o);

/* perf_fault.c: the fault driver on both hosts' ports, its counters, the loss check. */
int perf_fault_attach(struct perf_run *r);
void perf_fault_stats(const struct perf_host *h, struct droce_fault_stats *st);
bool perf_fault_lossy(const struct perf_run *r);
bool perf_fault_settled(const struct perf_run *r, const struct droce_engine_stats *b0,
			uint64_t received);
int perf_fault_check(const struct perf_run *r, const struct perf_bw *f);
/*
 * perf_cc.c: --bottleneck, --cc, --dcqcn, --engines and --per-qp. The options (0, or -1
 * after a message); the samples of a round (start, one per loop pass: it takes one each
 * period; end, which prints them with each QP's figures, the bottleneck's counters and
 * Jain's fairness index). 0, or -1 (out of memory).
 */
enum perf_cc_opt {
	PERF_CC_OPT_BOTTLENECK,
	PERF_CC_OPT_PARAM,
	PERF_CC_OPT_DCQCN,
	PERF_CC_OPT_ENGINES,
	PERF_CC_OPT_PER_QP,
};
int perf_cc_opt(struct perf_opts *o, enum perf_cc_opt opt, const char *arg);
void perf_cc_usage(void);
int perf_cc_round_start(struct perf_run *r, uint64_t t0);
void perf_cc_sample(struct perf_run *r, uint64_t now);
void perf_cc_round_end(struct perf_run *r, uint64_t now, uint32_t size);
void perf_cc_free(struct perf_run *r);
/* The fault driver keys host b's port gets for --bottleneck ("" none). */
const char *perf_cc_bottleneck(const struct perf_opts *o);

/* perf_raw.c */
int perf_raw_run(struct perf_run *r, uint32_t size);

/* perf_report.c */
void perf_report_header(const struct perf_run *r);
void perf_report_bw(const struct perf_run *r, const struct perf_bw *f);
void perf_report_lat(const struct perf_run *r, const struct perf_lat *f);
void perf_report_footer(const struct perf_run *r);
void perf_report_ports(const struct perf_run *r);
void perf_report_faults(const struct perf_run *r);
/*
 * The same, with testpmd's "Throughput (since last show)" from the counts in since[] (one
 * per host, updated), or without when since is NULL.
 */
void perf_report_ports_since(const struct perf_run *r, struct perf_port_mark since[2]);

#endif /* PERF_H */
