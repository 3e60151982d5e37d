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
 * Files by layer, top first (layers.txt; devtools/layer-check.py, test
 * 'droce_perf_layers': a file calls its own layer or lower ones, and no two files call
 * each other):
 *   perf_main.c (main: EAL, signals, one run or the prompt), perf_prompt.c (-i's prompt,
 *   on DPDK's cmdline library), perf_control.c (a run on a worker lcore, the main lcore
 *   printing --stats-period's statistics or reading -i's commands);
 *   perf_run.c (every size of a run through its mode's row), perf_opts.c (options,
 *   --help);
 *   the modes, one row each of struct perf_mode_ops listed in perf_modes.c: perf_send.c,
 *   perf_write.c, perf_read.c, perf_atomic.c (the stream modes, on perf_stream.c's
 *   round), perf_lat.c, perf_raw.c (raw-tx, raw-rx, raw-io);
 *   perf_stream.c (the round of send, write, read and atomic);
 *   perf_report.c (perftest's tables, --json lines, port statistics), perf_cc.c
 *   (congestion's options and --per-qp's samples);
 *   perf_host.c (the hosts: ports, engines, regions, QPs, connected; set up again, closed);
 *   perf_peer.c (the peer in another process: its out-of-band exchange in perftest's
 *   order), perf_fault.c (the fault driver's loss options and counters), perf_lcores.c
 *   (host b on its own lcore), perf_ud.c (UD: address handles, Q_Key);
 *   perf_poll.c (one pass of a host's engines, their counters), perf_qp.c (receives
 *   posted, completions looked at);
 *   perf_net.c (lib/net's ARP and ICMP through the engines' slow path), perf_oob.c
 *   (perftest's out-of-band messages).
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
#include <droce_wire_gid.h>

#define PERF_MIN_SIZE		1u
#define PERF_MAX_SIZE		(1u << 20)
#define PERF_MAX_QPS		10000u
/* --burst: WRs per post call (raw: frames per tx burst), at most the post arrays' length. */
#define PERF_MAX_BURST		32u
/* The RoCE rounds' post arrays: WRs per post call (one doorbell each). */
#define PERF_POST_CHAIN		32
/* Completions taken per poll of a CQ. */
#define PERF_POLL_BURST		64
/* A round that moves nothing for this long failed (the local ACK timer is 1 s). */
#define PERF_STALL_S		10
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

/* What a mode runs when neither -s nor -n (-D) is given: perftest's defaults. */
#define PERF_DEFAULT_BW_SIZE	65536
#define PERF_DEFAULT_LAT_SIZE	2
#define PERF_DEFAULT_RAW_SIZE	64
#define PERF_DEFAULT_BW_ITERS	5000
#define PERF_DEFAULT_LAT_ITERS	1000
#define PERF_DEFAULT_RAW_ITERS	1000000

struct perf_opts;
struct perf_run;
struct perf_qp;

/*
 * A peer in another process (perf_peer.c): the order of the out-of-band exchange, which
 * is the perftest program's that the mode stands for, or droce-perf's own.
 */
enum perf_peer_order {
	PERF_PEER_NONE,		/* no peer in another process */
	PERF_PEER_SEND,		/* ib_send_bw's and ib_send_lat's */
	PERF_PEER_WRITE,	/* ib_write_bw's */
	PERF_PEER_RAW,		/* droce-perf's own, the raw modes' (perftest has none) */
};

/*
 * A mode (--mode), testpmd's struct fwd_engine: one row, filled in the mode's own file
 * (perf_send.c, ...; the raw modes share perf_raw.c) and listed in perf_modes.c, so a new
 * mode is a file and a row. Its flags are what the options, the hosts' set-up, the peer
 * exchange and the output need to know of it; its callbacks run its rounds. Callbacks a
 * mode has no use for are NULL.
 */
struct perf_mode_ops {
	const char *name;		/* --mode, set mode, the header, --json, the raw hello */
	/* The options (perf_opts.c). */
	uint32_t default_size;		/* -s when not given */
	uint32_t default_iters;		/* -n when neither -n nor -D is given */
	bool several_qps;		/* -q above 1 */
	bool uc, ud;			/* -c UC, -c UD besides RC (the raw modes: no QPs) */
	enum perf_peer_order peer;	/* --server, --client */
	/* Its own rules after the common ones: 0, or -1 after a message. */
	int (*check_opts)(const struct perf_opts *o);
	/* The hosts (perf_host.c) and the output (perf_report.c, perf_cc.c). */
	bool raw;			/* no QP, no engine: the ports alone */
	uint32_t qp_depth;		/* every QP's send and receive ring; 0: by the QP count */
	bool shared_qps;		/* hosts set up for it serve any mode with shared_qps */
	bool two_sided;			/* b posts receives, and its completions count */
	bool latency;			/* perftest's latency figures, not bandwidth */
	/* A round at one size, its figure printed (perf_run.c): 0, or -1 after a message. */
	int (*run)(struct perf_run *r, uint32_t size);
	/* The stream modes' round (perf_stream_run): before it, once its counters are taken. */
	void (*prepare)(struct perf_run *r);
	/* a's WR on q: its opcode and the opcode's fields; sge is a's slot, size bytes */
	void (*wr)(struct perf_run *r, struct perf_qp *q, struct ibv_send_wr *wr,
		   struct ibv_sge *sge, uint32_t size);
	/* One-sided: what b's responder did of sent, from its counters b0 then b1. */
	uint64_t (*delivered)(const struct perf_run *r, const struct droce_engine_stats *b0,
			      const struct droce_engine_stats *b1, uint32_t size, uint64_t sent);
	/* After a round of sent requests, every one complete: 0, or -1 after a message. */
	int (*check)(struct perf_run *r, const struct droce_engine_stats *b0,
		     const struct droce_engine_stats *b1, uint64_t sent, uint32_t size);
};

/* The rows, each in its mode's file. */
extern const struct perf_mode_ops perf_mode_send;
extern const struct perf_mode_ops perf_mode_write;
extern const struct perf_mode_ops perf_mode_read;
extern const struct perf_mode_ops perf_mode_atomic;
extern const struct perf_mode_ops perf_mode_lat;
extern const struct perf_mode_ops perf_mode_raw_tx;
extern const struct perf_mode_ops perf_mode_raw_rx;
extern const struct perf_mode_ops perf_mode_raw_io;
/* perf_modes.c: the table, in --help's order, NULL after the last. */
extern const struct perf_mode_ops *const perf_modes[];

/* Which hosts this process runs. */
enum perf_role {
	PERF_ROLE_BOTH,		/* host a and host b */
	PERF_ROLE_CLIENT,	/* host a: connects to the peer, sends (lat: pings first) */
	PERF_ROLE_SERVER,	/* host b: waits for the peer, receives (lat: answers) */
};

struct perf_opts {
	const struct perf_mode_ops *mode;
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
int perf_opt_mode(const char *s, const struct perf_mode_ops **m);
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

/* ---- Hosts (perf_host.c) ---- */

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
	 * may have room to post, each at most once (perf_stream.c): with 10,000 QPs, a pass
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
	/* Alone (perf_net.c): ARP and ICMP through the engines' slow path; else NULL. */
	struct droce_net *net;
	struct rte_ring *slow_rx, *slow_tx;
	uint64_t net_tick, net_tick_cycles;	/* lib/net's timer: last run, period */
};

/*
 * The next of q's message slots in h's buffer, in turn: consecutive messages do not share
 * cache lines. Inline: the stream modes take one per WR.
 */
static inline uint64_t
perf_qp_slot(const struct perf_host *h, struct perf_qp *q)
{
	uint32_t s = q->next_slot;

	q->next_slot = s + 1 == h->buf_slots ? 0 : s + 1;
	return (uintptr_t)h->buf + (uint64_t)s * h->slot_size;
}

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
	/* atomic (perf_atomic.c): b's words before the round; the next compare, word by word */
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

/* One figure of a bandwidth run (perf_stream.c, perf_raw.c -> perf_report.c). */
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
	bool server_known;		/* server_rx and server_fwd printed */
	bool back_known;		/* raw-io: received is what came back to the client */
	double secs;
};

struct perf_lat {
	uint32_t size;
	uint64_t iters;
	double min_us, max_us, typical_us, avg_us, stdev_us, p99_us, p999_us;
};

/*
 * The files' functions, by layer, top first (layers.txt). perf_run.c: every size of a run
 * (one, or -a's) through its mode's row, figures printed. 0, or -1 failed.
 */
int perf_run_sizes(struct perf_run *r);

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

/*
 * perf_stream.c: the round of the stream modes (send, write, read, atomic), their rows'
 * run; where a WRITE or READ of a's slot sge lands in the peer's buffer.
 */
int perf_stream_run(struct perf_run *r, uint32_t size);
uint64_t perf_stream_remote(const struct perf_run *r, const struct perf_qp *q,
			    const struct ibv_sge *sge, uint32_t size);

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

/*
 * perf_host.c: the hosts r->o asks for: both here, or (--server, --client) the one whose
 * peer is another process, met over the out-of-band exchange. 0, or -1 after a message.
 */
int perf_hosts_open(struct perf_run *r, struct perf_opts *o);
/*
 * Hosts fit for r->o (the prompt's next start): kept when they are, closed and opened
 * again when r->o changed what they were set up for. 0, or -1 after a message.
 */
int perf_hosts_fit(struct perf_run *r);
/* A run with a peer process that went well: the closing exchange, then this end closed. */
int perf_hosts_peer_close(struct perf_run *r);
/* Every host closed, and the peer process let go (after it, when this server failed). */
void perf_hosts_close(struct perf_run *r, bool failed);

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
const char *perf_peer_name(const struct perf_run *r);

/* perf_fault.c: the fault driver on both hosts' ports, its counters, the loss check. */
int perf_fault_attach(struct perf_run *r);
void perf_fault_stats(const struct perf_host *h, struct droce_fault_stats *st);
bool perf_fault_lossy(const struct perf_run *r);
bool perf_fault_settled(const struct perf_run *r, const struct droce_engine_stats *b0,
			uint64_t received);
int perf_fault_check(const struct perf_run *r, const struct perf_bw *f);

/* perf_ud.c: UD QPs, one address handle per engine towards the peer. */
int perf_ud_connect(struct perf_host *h, const struct perf_peer *p, uint32_t pd);
bool perf_ud_ah_valid(const struct perf_host *h, uint32_t ah);
void perf_ud_wr(const struct perf_run *r, const struct perf_qp *q, struct ibv_send_wr *wr,
		const struct perf_peer *peer);
uint32_t perf_recv_room(const struct perf_opts *o);

/* perf_poll.c: one pass of every engine of h (and of its lib/net); their counters summed. */
void perf_host_poll(struct perf_host *h);
void perf_host_stats(const struct perf_host *h, struct droce_engine_stats *st);

/*
 * perf_qp.c: what both RoCE rounds (perf_stream.c, perf_lat.c) do with a QP: receives of
 * the largest size posted (n at most, how many), its receive ring filled, the QP of a
 * completion, a completion's status (false after printing it).
 */
uint32_t perf_qp_post_recvs(struct perf_host *h, struct perf_qp *q, uint32_t n);
void perf_qp_fill_recvs(struct perf_host *h, struct perf_qp *q);
struct perf_qp *perf_qp_of(const struct perf_host *h, uint32_t qpn);
bool perf_wc_ok(const struct ibv_wc *wc, const char *who);

/*
 * perf_net.c: a host alone (--server, --client) with lib/net: its address (--ip, or
 * 192.0.2.<host id>/24) and GID, ARP and ICMP through its engines' slow path; a pass of
 * its frames and timers; its release (nothing when it has none).
 */
int perf_net_open(struct perf_host *h, const struct perf_opts *o);
void perf_net_poll(struct perf_host *h);
void perf_net_release(struct perf_host *h);

#endif /* PERF_H */
