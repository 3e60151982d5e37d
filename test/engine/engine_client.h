/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ENGINE_CLIENT_H
#define ENGINE_CLIENT_H

/*
 * The engine tests' client of the lib/shm ABI: verbs-shaped helpers that lay out a client
 * region, create objects through lib/engine's control functions, and post and poll through
 * lib/shm's client functions, exactly as libdroce does. A "host" is one side of a link: a
 * device with its engines (each on its own lcore) behind one port.
 */

#include <stdbool.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <droce_engine.h>
#include <droce_fault.h>
#include <droce_shm_arena.h>
#include <droce_shm_client.h>
#include <droce_shm_qp_attr.h>

#include <droce_engine_region.h>

#define TC_MAX_ENGINES	4
#define TC_MAX_MRS	64

struct tc_mr {
	uint8_t *buf;
	uint64_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t access;
};

struct tc_host {
	const char *name;
	struct droce_engine_dev *dev;
	struct droce_engine *eng[TC_MAX_ENGINES];
	unsigned int lcore[TC_MAX_ENGINES];
	unsigned int nb_eng;
	uint16_t port;
	struct rte_mempool *mp;
	uint8_t mac[6];
	uint8_t gid[16];		/* IPv4-mapped RoCEv2 GID, table index 0 */
	uint8_t gid6[16];		/* an IPv6 GID, table index 1 */
	struct droce_engine_domain *dom;
	void *region;
	uint64_t region_size;
	struct droce_shm_arena arena;
	uint32_t next_slot[TC_MAX_ENGINES];
	uint32_t pd;
	struct tc_mr mrs[TC_MAX_MRS];
	unsigned int nb_mrs;
	uint32_t next_handle;
	struct droce_fault *fault;	/* on the port's receive side, or NULL */
};

struct tc_cq {
	struct tc_host *h;
	struct droce_engine_cq *cq;
	struct droce_shm_client_cq view;
	int efd;			/* the completion channel */
	struct droce_engine_region_cq_mem mem;
	uint32_t handle;
};

struct tc_srq {
	struct tc_host *h;
	struct droce_engine_srq *srq;
	struct droce_shm_client_srq view;
	int64_t ctl_off, ring_off;
	uint64_t ring_len;
	uint32_t handle;
};

struct tc_qp {
	struct tc_host *h;
	struct droce_engine_qp *qp;
	struct droce_shm_client_qp view;
	uint32_t qpn;
	unsigned int engine;
	struct droce_engine_region_qp_mem mem;
};

struct tc_qp_init {
	uint8_t type;			/* DROCE_SHM_QPT_* */
	unsigned int engine;		/* index in the host */
	struct tc_cq *scq, *rcq;
	struct tc_srq *srq;
	uint32_t sq_size, rq_size;	/* powers of two */
	uint32_t max_sge;
	uint32_t max_inline;
	bool sq_sig_all;
	uint32_t xrcd;			/* XRC_RECV: its XRC domain (XRC_SEND: no rcq, no RQ) */
};

/* Path parameters of tc_connect(). */
struct tc_path {
	uint8_t mtu;			/* enum ibv_mtu */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint32_t psn_a, psn_b;		/* a's send PSN, b's send PSN */
	bool ipv6;			/* address by GID index 1 */
	uint32_t access_a, access_b;	/* qp_access_flags of a's and b's QP; 0: LOCAL_WRITE */
	uint8_t rd_atomic;		/* max_rd_atomic and max_dest_rd_atomic; 0: 1 */
};

/*
 * Two hosts joined by net_ring. Host b's engines 1.. receive nothing from the port: every
 * packet arrives on b's queue 0 (and a's), so QPs on other engines are reached through
 * the engines' handoff rings. nb_eng engines per host, each on its own lcore.
 */
void tc_pair_open(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
		  unsigned int nb_eng_b);
/*
 * The engines' idle_sleep_us on hosts a and b of the next tc_pair_open* (0: they never
 * nap); that pair's only, the others nap TC_IDLE_US.
 */
void tc_next_pair_idle(uint32_t a_us, uint32_t b_us);
/*
 * How the next tc_pair_open*'s engines wait on hosts a and b (droce_engine_conf.wait);
 * without it, ADAPTIVE where they nap, POLL where they never do.
 */
void tc_next_pair_wait(enum droce_engine_wait a, enum droce_engine_wait b);
/*
 * The next tc_pair_open*'s engines go back early (droce_engine_conf.early_retransmit);
 * others only at the local ACK timeout, so tests that count packets on a slow shared
 * machine see no early go-back.
 */
void tc_next_pair_early(void);
/*
 * The congestion parameters of every host made from now on (droce_engine_conf.cc; p must
 * outlive them); NULL: the engine's defaults.
 */
void tc_hosts_cc(const struct droce_cc_params *p);
/*
 * The same with drivers/net/fault on each host's receive side: fault_a and fault_b are
 * its arguments without port= ("seed=7,drop=10000"), or NULL for none.
 */
void tc_pair_open_faults(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
			 unsigned int nb_eng_b, const char *fault_a, const char *fault_b);
/* The first byte of buf[from, to) that is not b, or -1: what a WRITE touched that it must not. */
int64_t tc_first_not(const uint8_t *buf, uint64_t from, uint64_t to, uint8_t b);
/*
 * One engine each, the same faults on both receive sides ("drop=10000") or none (NULL):
 * a's fault driver seeded with seed, b's with seed + 1, so each test file's losses differ
 * from another's and repeat run after run.
 */
void tc_pair_open_seeded(struct tc_host *a, struct tc_host *b, const char *faults,
			 unsigned int seed);
/*
 * One host on a new vdev port (net_memif, net_af_packet: vdev is its name, args its
 * devargs), its engines started; the peer host (peer_id) is its neighbour. For the
 * two-process tests: each process opens one host.
 */
void tc_host_open_vdev(struct tc_host *h, const char *name, const char *vdev, const char *args,
		       unsigned int nb_eng, uint8_t host_id, uint8_t peer_id);
void tc_host_start(struct tc_host *h);
/* Stops engines, destroys everything; checks no mbuf leaked. */
void tc_host_close(struct tc_host *h);
void tc_pair_close(struct tc_host *a, struct tc_host *b);

struct tc_mr *tc_mr_reg(struct tc_host *h, uint64_t len, uint32_t access);
/* The same at a chosen iova (remote addresses are relative to it). */
struct tc_mr *tc_mr_reg_iova(struct tc_host *h, uint64_t len, uint32_t access, uint64_t iova);
/* droce_engine_mr_dereg of mr (its buffer stays, for checks): 0 or -errno. */
int tc_mr_dereg(struct tc_host *h, struct tc_mr *mr);
/*
 * ibv_alloc_mw in the host's PD: *mw as libibverbs would hold it (rkey, type; no context),
 * for BIND_MW WRs; tc_mw_dealloc frees the window: 0 or -errno.
 */
void tc_mw_alloc(struct tc_host *h, enum ibv_mw_type type, struct ibv_mw *mw);
int tc_mw_dealloc(struct tc_host *h, struct ibv_mw *mw);
struct tc_cq *tc_cq_create(struct tc_host *h, uint32_t size);
void tc_cq_destroy(struct tc_cq *cq);
/* ibv_resize_cq: 0 or -errno (droce_engine_region_cq_resize). */
int tc_cq_resize(struct tc_cq *cq, uint32_t size);
struct tc_srq *tc_srq_create(struct tc_host *h, uint32_t size, uint32_t max_sge,
			     uint32_t limit);
/* An XRC SRQ of XRC domain xrcd (any non-zero number) completing on cq. */
struct tc_srq *tc_srq_create_xrc(struct tc_host *h, uint32_t size, uint32_t max_sge,
				 uint32_t xrcd, struct tc_cq *cq);
void tc_srq_destroy(struct tc_srq *srq);
struct tc_qp *tc_qp_create(struct tc_host *h, const struct tc_qp_init *init);
void tc_qp_destroy(struct tc_qp *qp);

/* ibv_modify_qp with a verbs-shaped attribute: returns 0 or -errno. */
int tc_modify(struct tc_qp *qp, const struct droce_shm_qp_attr *attr);
/* RESET -> INIT -> RTR -> RTS on both QPs, each addressed at the other. */
void tc_connect(struct tc_qp *a, struct tc_qp *b, const struct tc_path *path);
/*
 * The same for one QP whose peer lives in another process: host peer_id's address,
 * dest_qpn, this QP sending from path->psn_a and expecting path->psn_b.
 */
void tc_connect_remote(struct tc_qp *qp, uint32_t dest_qpn, uint8_t peer_id,
		       const struct tc_path *path);
/* UD QP to RTS (qkey). */
void tc_ud_ready(struct tc_qp *qp, uint32_t qkey, uint32_t sq_psn);
int tc_ah_create(struct tc_host *h, unsigned int engine, const struct tc_host *to,
		 bool ipv6, uint32_t *ah);
/* An AH to GID gid (a multicast group, say), from the source GID of its family. */
int tc_ah_create_gid(struct tc_host *h, unsigned int engine, const uint8_t gid[16], uint32_t *ah);

/* Posting: the lib/shm client functions, as ibv_post_*. */
int tc_post_send(struct tc_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int tc_post_recv(struct tc_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int tc_post_srq_recv(struct tc_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
/* One-WR conveniences. */
int tc_send(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off,
	    uint32_t len, unsigned int flags);
int tc_recv(struct tc_qp *qp, uint64_t wr_id, const struct tc_mr *mr, uint64_t off,
	    uint32_t len);
/*
 * Posts wr (its opcode, flags and remote fields already set) with one SGE: mr[off, off + len).
 * wr->sg_list, num_sge and next are set here.
 */
int tc_post_one(struct tc_qp *qp, struct ibv_send_wr *wr, const struct tc_mr *mr, uint64_t off,
		uint32_t len);
int tc_srq_recv(struct tc_srq *srq, uint64_t wr_id, const struct tc_mr *mr, uint64_t off,
		uint32_t len);

/* ibv_poll_cq; tc_wait polls until n completions arrived or timeout_ms passed: count. */
int tc_poll(struct tc_cq *cq, int n, struct ibv_wc *wc);
int tc_wait(struct tc_cq *cq, int n, struct ibv_wc *wc, unsigned int timeout_ms);
/* Waits up to timeout_ms for the next asynchronous event of the host: 1 or 0. */
int tc_event(struct tc_host *h, struct droce_engine_event *ev, unsigned int timeout_ms);

/* Current state of the QP as the engine published it. */
uint32_t tc_qp_state(const struct tc_qp *qp);
/* Sum of a counter over the host's engines. */
uint64_t tc_counter(const struct tc_host *h, const char *name);
/* A QP's counter under its Linux name (droce_engine.h's DROCE_ENGINE_QP_COUNTERS), and
 * the same summed over every QP the host's engines served. */
uint64_t tc_qp_counter(const struct tc_qp *q, const char *name);
uint64_t tc_port_counter(const struct tc_host *h, const char *name);
/* A counter of the host's engine eng; the name must be one of lib/engine's. */
uint64_t tc_engine_counter(const struct tc_host *h, unsigned int eng, const char *name);
/* Prints the non-zero counters of both hosts (diagnostics on failure). */
void tc_dump(const struct tc_host *h);

struct rte_ring;

/* Explicit addresses of a host (tc_host_open_rings). */
struct tc_host_addr {
	uint8_t mac[6];
	uint8_t gid[16];		/* IPv4-mapped RoCEv2 GID, table index 0 */
	uint8_t gid6[16];		/* an IPv6 GID, table index 1 */
};

/*
 * One host with one engine on a net_ring port, for single-threaded tools: the caller puts
 * the frames the port receives on *rx, takes those it sends from *tx, and runs the engine
 * with droce_engine_poll() on the main lcore (EAL without workers). The peer's GIDs are
 * its neighbours at peer->mac. tc_host_close() frees the rings.
 */
void tc_host_open_rings(struct tc_host *h, const char *name, const struct tc_host_addr *self,
			const struct tc_host_addr *peer, struct rte_ring **rx, struct rte_ring **tx);

/* A host's rings to and from its control thread (droce_engine_conf.slow_rx, slow_tx). */
struct tc_slow {
	struct rte_ring *rx;		/* every engine's slow_rx, or NULL */
	struct rte_ring *tx;		/* engine 0's slow_tx, or NULL */
};

/*
 * tc_pair_open with slow-path rings on each host (slow_a, slow_b: NULL for none); the
 * caller owns them and empties them before tc_pair_close, whose leak check counts their
 * mbufs. *ab (a's port sends, b's receives) and *ba (the other way) are the link's rings,
 * so that a test can put frames on the wire as the other host's port would.
 */
void tc_pair_open_slow(struct tc_host *a, struct tc_host *b, unsigned int nb_eng_a,
		       unsigned int nb_eng_b, const struct tc_slow *slow_a,
		       const struct tc_slow *slow_b, struct rte_ring **ab, struct rte_ring **ba);

#endif /* ENGINE_CLIENT_H */
