/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_badargs: calls every verb with invalid arguments and checks the failure rdma-core
 * documents (the ibv_* man pages), never a crash. Where the man pages say nothing, the
 * expected value is what rdma-core's libibverbs with the rxe provider and kernel driver
 * returns (cited per row), or droce's own documented rule (lib/shm headers) where droce
 * refuses at post or modify time what rxe would only fail later.
 *
 * The device is the first one libdroce finds (DROCE_SOCKET). Each row is one small
 * function returning the verb's result; it prints "ok NAME" or "FAIL NAME: got rc=.. errno=..
 * want ..", then a summary. Afterwards every object made is destroyed and each destroy must
 * return 0. Exit 0 only when every row passed and the teardown was clean.
 *
 * Rows returning a pointer report 0 for NULL and 1 otherwise (an unexpected object is
 * destroyed at once). Verbs that return an errno value are checked on that value (errno is
 * not part of their contract); verbs that return -1 or NULL are checked on errno.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define ERR_ANY		(-1)	/* errno not checked: the verb returns its errno */
#define SKIP		(-1000)	/* a row's precondition does not hold on this device */
#define BUF_SIZE	(64 * 1024)
#define FX_QP_WR	16
#define FX_SGE		2
#define FX_INLINE	64
#define UD_QKEY		0x11111111u
#define PSN_A		0x123
#define PSN_B		0x456
#define TIMEOUT_MS	5000

/* Everything the rows use, created once before the table runs. */
struct fx {
	struct ibv_context *ctx;
	struct ibv_device_attr dattr;
	struct ibv_port_attr pattr;
	union ibv_gid gid0;
	struct ibv_comp_channel *chan;
	struct ibv_cq *cq;		/* on chan; used by every QP */
	struct ibv_pd *pd;		/* holds buf's MR, the QPs, the SRQ, the AH */
	struct ibv_pd *pd_qp;		/* holds one QP only */
	struct ibv_pd *pd_ah;		/* holds one AH only */
	struct ibv_pd *pd_free;		/* nothing: dealloc must succeed */
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_qp *qp_reset;	/* RC, stays in RESET */
	struct ibv_qp *qp_init;		/* RC, moved around by the modify rows */
	struct ibv_qp *qp_a, *qp_b;	/* RC, connected to each other (loopback), RTS */
	struct ibv_qp *ud;		/* UD, RTS */
	struct ibv_qp *qp_srq;		/* RC on the SRQ */
	struct ibv_qp *qp_pd;		/* on pd_qp */
	struct ibv_srq *srq;
	struct ibv_ah *ah, *ah_pd;
	uint32_t qp_max_inline;		/* qp_a's max_inline_data */
	uint32_t empty_gid;		/* an index whose entry is empty */
	long ret;
	int err;
	void *bad;			/* *bad_wr after a post row */
	void *want_bad;
};

struct row {
	const char *name;
	long (*fn)(struct fx *f);
	long want_rc;
	int want_err;		/* ERR_ANY: compare rc (and alt) only */
	int alt;		/* another accepted rc (ERR_ANY rows) or errno, 0: none */
};

/* An int verb: remember errno, return the result. */
#define CALL(f, expr) (errno = 0, (f)->ret = (long)(expr), (f)->err = errno, (f)->ret)

/* A pointer verb: 0 for NULL (errno kept), 1 for an object, which is destroyed. */
#define CALL_PTR(f, expr, destroy) do {						\
		void *p_;							\
		errno = 0;							\
		p_ = (void *)(expr);						\
		(f)->err = errno;						\
		if (p_ == NULL)							\
			return 0;						\
		(void)destroy(p_);						\
		return 1;							\
	} while (0)

static int
destroy_cq_ex(struct ibv_cq_ex *cq)
{
	return ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

/* ---- Fixture ---- */

static struct ibv_qp *
make_qp(struct fx *f, struct ibv_pd *pd, enum ibv_qp_type type, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = f->cq;
	ia.recv_cq = f->cq;
	ia.srq = srq;
	ia.qp_type = type;
	ia.cap.max_send_wr = FX_QP_WR;
	ia.cap.max_recv_wr = srq != NULL ? 0 : FX_QP_WR;
	ia.cap.max_send_sge = FX_SGE;
	ia.cap.max_recv_sge = srq != NULL ? 0 : FX_SGE;
	ia.cap.max_inline_data = FX_INLINE;
	return ibv_create_qp(pd, &ia);
}

static void
fill_ah(struct fx *f, struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.dgid = f->gid0;
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = 64;
}

static int
qp_init(struct ibv_qp *qp, enum ibv_qp_type type)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	mask |= type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	return ibv_modify_qp(qp, &a, mask);
}

static int
rc_connect(struct fx *f, struct ibv_qp *qp, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn)
{
	struct ibv_qp_attr a;
	int ret;

	ret = qp_init(qp, IBV_QPT_RC);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.min_rnr_timer = 12;
	fill_ah(f, &a.ah_attr);
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			    IBV_QP_MIN_RNR_TIMER);
	if (ret != 0)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int
ud_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int ret = qp_init(qp, IBV_QPT_UD);

	if (ret != 0)
		return ret;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret != 0)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = PSN_A;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

#define SETUP(cond, what) do {							\
		if (!(cond)) {							\
			printf("FAIL setup: %s: %s\n", what, strerror(errno));	\
			return -1;						\
		}								\
	} while (0)

#define SETUP_RC(expr, what) do {						\
		int r_ = (expr);						\
		if (r_ != 0) {							\
			printf("FAIL setup: %s: %s\n", what, strerror(r_));	\
			return -1;						\
		}								\
	} while (0)

static int
fx_open(struct fx *f)
{
	struct ibv_device **list;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qia;
	struct ibv_srq_init_attr sia;
	struct ibv_ah_attr aha;
	struct ibv_gid_entry ge;
	int num = 0;
	uint32_t i;

	list = ibv_get_device_list(&num);
	SETUP(list != NULL && num > 0, "ibv_get_device_list: no device");
	f->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	SETUP(f->ctx != NULL, "ibv_open_device");
	SETUP_RC(ibv_query_device(f->ctx, &f->dattr), "ibv_query_device");
	SETUP_RC(ibv_query_port(f->ctx, 1, &f->pattr), "ibv_query_port");
	SETUP(ibv_query_gid(f->ctx, 1, 0, &f->gid0) == 0, "ibv_query_gid 0");
	f->empty_gid = UINT32_MAX;
	for (i = (uint32_t)f->pattr.gid_tbl_len; i-- > 1;)
		if (ibv_query_gid_ex(f->ctx, 1, i, &ge, 0) == ENODATA) {
			f->empty_gid = i;
			break;
		}
	f->chan = ibv_create_comp_channel(f->ctx);
	SETUP(f->chan != NULL, "ibv_create_comp_channel");
	f->cq = ibv_create_cq(f->ctx, 256, NULL, f->chan, 0);
	SETUP(f->cq != NULL, "ibv_create_cq");
	f->pd = ibv_alloc_pd(f->ctx);
	f->pd_qp = ibv_alloc_pd(f->ctx);
	f->pd_ah = ibv_alloc_pd(f->ctx);
	f->pd_free = ibv_alloc_pd(f->ctx);
	SETUP(f->pd != NULL && f->pd_qp != NULL && f->pd_ah != NULL && f->pd_free != NULL,
	      "ibv_alloc_pd");
	f->buf = aligned_alloc(4096, BUF_SIZE);
	SETUP(f->buf != NULL, "aligned_alloc");
	memset(f->buf, 0, BUF_SIZE);
	f->mr = ibv_reg_mr(f->pd, f->buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE);
	SETUP(f->mr != NULL, "ibv_reg_mr");
	memset(&sia, 0, sizeof(sia));
	sia.attr.max_wr = FX_QP_WR;
	sia.attr.max_sge = FX_SGE;
	f->srq = ibv_create_srq(f->pd, &sia);
	SETUP(f->srq != NULL, "ibv_create_srq");
	f->qp_reset = make_qp(f, f->pd, IBV_QPT_RC, NULL);
	f->qp_init = make_qp(f, f->pd, IBV_QPT_RC, NULL);
	f->qp_a = make_qp(f, f->pd, IBV_QPT_RC, NULL);
	f->qp_b = make_qp(f, f->pd, IBV_QPT_RC, NULL);
	f->ud = make_qp(f, f->pd, IBV_QPT_UD, NULL);
	f->qp_srq = make_qp(f, f->pd, IBV_QPT_RC, f->srq);
	f->qp_pd = make_qp(f, f->pd_qp, IBV_QPT_RC, NULL);
	SETUP(f->qp_reset != NULL && f->qp_init != NULL && f->qp_a != NULL && f->qp_b != NULL &&
	      f->ud != NULL && f->qp_srq != NULL && f->qp_pd != NULL, "ibv_create_qp");
	SETUP_RC(rc_connect(f, f->qp_a, f->qp_b->qp_num, PSN_B, PSN_A), "qp_a to RTS");
	SETUP_RC(rc_connect(f, f->qp_b, f->qp_a->qp_num, PSN_A, PSN_B), "qp_b to RTS");
	SETUP_RC(ud_rts(f->ud), "UD QP to RTS");
	SETUP_RC(ibv_query_qp(f->qp_a, &qa, IBV_QP_CAP, &qia), "ibv_query_qp");
	f->qp_max_inline = qia.cap.max_inline_data;
	fill_ah(f, &aha);
	f->ah = ibv_create_ah(f->pd, &aha);
	f->ah_pd = ibv_create_ah(f->pd_ah, &aha);
	SETUP(f->ah != NULL && f->ah_pd != NULL, "ibv_create_ah");
	return 0;
}

/* ---- Rows: device, port, GID, P_Key, events ---- */

static long
r_query_port_0(struct fx *f)
{
	struct ibv_port_attr pa;

	return CALL(f, ibv_query_port(f->ctx, 0, &pa));
}

static long
r_query_port_2(struct fx *f)
{
	struct ibv_port_attr pa;

	return CALL(f, ibv_query_port(f->ctx, 2, &pa));
}

static long
r_query_port_255(struct fx *f)
{
	struct ibv_port_attr pa;

	return CALL(f, ibv_query_port(f->ctx, 255, &pa));
}

static long
r_query_device_ex_mask(struct fx *f)
{
	struct ibv_query_device_ex_input in = { .comp_mask = 1 };
	struct ibv_device_attr_ex da;

	/* verbs.h: a non-zero input comp_mask is EINVAL before the provider is asked. */
	return CALL(f, ibv_query_device_ex(f->ctx, &in, &da));
}

static long
r_query_gid_port0(struct fx *f)
{
	union ibv_gid g;

	return CALL(f, ibv_query_gid(f->ctx, 0, 0, &g));
}

static long
r_query_gid_past_table(struct fx *f)
{
	union ibv_gid g;

	return CALL(f, ibv_query_gid(f->ctx, 1, f->pattr.gid_tbl_len, &g));
}

static long
r_query_gid_negative(struct fx *f)
{
	union ibv_gid g;

	return CALL(f, ibv_query_gid(f->ctx, 1, -1, &g));
}

static long
r_query_gid_empty(struct fx *f)
{
	union ibv_gid g;

	/* libibverbs: an empty entry reads as 0 with a zero GID ("preserve API behavior").
	 * Skipped when every entry up to gid_tbl_len is valid (droced reports no spare ones). */
	memset(&g, 0xFF, sizeof(g));
	if (f->empty_gid == UINT32_MAX)
		return SKIP;
	if (CALL(f, ibv_query_gid(f->ctx, 1, (int)f->empty_gid, &g)) != 0)
		return f->ret;
	return g.global.subnet_prefix == 0 && g.global.interface_id == 0 ? 0 : -101;
}

static long
r_query_gid_ex_past_table(struct fx *f)
{
	struct ibv_gid_entry e;

	return CALL(f, ibv_query_gid_ex(f->ctx, 1, f->pattr.gid_tbl_len, &e, 0));
}

static long
r_query_gid_ex_empty(struct fx *f)
{
	struct ibv_gid_entry e;

	/* ibv_query_gid_ex(3): ENODATA for an empty entry (rdma-core's tests check it). */
	if (f->empty_gid == UINT32_MAX)
		return SKIP;
	return CALL(f, ibv_query_gid_ex(f->ctx, 1, f->empty_gid, &e, 0));
}

static long
r_query_gid_ex_port2(struct fx *f)
{
	struct ibv_gid_entry e;

	return CALL(f, ibv_query_gid_ex(f->ctx, 2, 0, &e, 0));
}

static long
r_query_gid_ex_flags(struct fx *f)
{
	struct ibv_gid_entry e;

	/* ibv_query_gid_ex(3): flags "must be 0"; the kernel's GID_ENTRY method says EINVAL,
	 * libibverbs' sysfs fallback EOPNOTSUPP. */
	return CALL(f, ibv_query_gid_ex(f->ctx, 1, 0, &e, 1));
}

static long
r_query_gid_table_flags(struct fx *f)
{
	struct ibv_gid_entry e[4];

	/* ibv_query_gid_table(3): flags must be 0; a negative errno otherwise. */
	return CALL(f, ibv_query_gid_table(f->ctx, e, 4, 1));
}

static long
r_query_pkey_past_table(struct fx *f)
{
	__be16 pkey;

	return CALL(f, ibv_query_pkey(f->ctx, 1, f->pattr.pkey_tbl_len, &pkey));
}

static long
r_query_pkey_port2(struct fx *f)
{
	__be16 pkey;

	return CALL(f, ibv_query_pkey(f->ctx, 2, 0, &pkey));
}

static long
r_get_pkey_index_unknown(struct fx *f)
{
	/* ibv_get_pkey_index(3): -1 when the P_Key is not in the table. */
	return CALL(f, ibv_get_pkey_index(f->ctx, 1, htons(0x1234)));
}

static long
r_async_event_empty(struct fx *f)
{
	struct ibv_async_event ev;
	int fl = fcntl(f->ctx->async_fd, F_GETFL);
	long r;

	/* ibv_get_async_event(3): a non-blocking async_fd with nothing queued. */
	if (fl < 0 || fcntl(f->ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -100;
	r = CALL(f, ibv_get_async_event(f->ctx, &ev));
	if (r == 0)
		ibv_ack_async_event(&ev);
	fcntl(f->ctx->async_fd, F_SETFL, fl);
	return r;
}

static long
r_cq_event_empty(struct fx *f)
{
	struct ibv_cq *cq;
	void *cq_ctx;
	int fl = fcntl(f->chan->fd, F_GETFL);
	long r;

	/* ibv_get_cq_event(3): a non-blocking channel with no event: -1, EAGAIN. */
	if (fl < 0 || fcntl(f->chan->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -100;
	r = CALL(f, ibv_get_cq_event(f->chan, &cq, &cq_ctx));
	if (r == 0)
		ibv_ack_cq_events(cq, 1);
	fcntl(f->chan->fd, F_SETFL, fl);
	return r;
}

/* Not implemented by droce: EOPNOTSUPP through verbs.h's inline checks of the ops. */
static long
r_alloc_td(struct fx *f)
{
	struct ibv_td_init_attr a = { 0 };

	CALL_PTR(f, ibv_alloc_td(f->ctx, &a), ibv_dealloc_td);
}

static long
r_alloc_dm(struct fx *f)
{
	struct ibv_alloc_dm_attr a = { .length = 4096 };

	CALL_PTR(f, ibv_alloc_dm(f->ctx, &a), ibv_free_dm);
}

static long
r_open_xrcd(struct fx *f)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
					 IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1,
					 .oflags = O_CREAT };

	CALL_PTR(f, ibv_open_xrcd(f->ctx, &a), ibv_close_xrcd);
}

static long
r_create_counters(struct fx *f)
{
	struct ibv_counters_init_attr a = { 0 };

	CALL_PTR(f, ibv_create_counters(f->ctx, &a), ibv_destroy_counters);
}

static long
r_create_wq(struct fx *f)
{
	struct ibv_wq_init_attr a = { .wq_type = IBV_WQT_RQ, .max_wr = 16, .max_sge = 1,
				      .pd = f->pd, .cq = f->cq };

	CALL_PTR(f, ibv_create_wq(f->ctx, &a), ibv_destroy_wq);
}

static long
r_create_flow(struct fx *f)
{
	union {
		struct ibv_flow_attr attr;
		uint8_t raw[sizeof(struct ibv_flow_attr) + sizeof(struct ibv_flow_spec_eth)];
	} fa;
	struct ibv_flow_spec_eth eth;

	memset(&fa, 0, sizeof(fa));
	memset(&eth, 0, sizeof(eth));
	fa.attr.type = IBV_FLOW_ATTR_NORMAL;
	fa.attr.size = sizeof(fa.raw);
	fa.attr.num_of_specs = 1;
	fa.attr.port = 1;
	eth.type = IBV_FLOW_SPEC_ETH;
	eth.size = sizeof(eth);
	memcpy(fa.raw + sizeof(fa.attr), &eth, sizeof(eth));
	CALL_PTR(f, ibv_create_flow(f->ud, &fa.attr), ibv_destroy_flow);
}

/* ---- PD ---- */

static long
r_dealloc_pd_with_mr_qp(struct fx *f)
{
	/* ibv_alloc_pd(3): "fail if any other IB resource is still associated": EBUSY. */
	return CALL(f, ibv_dealloc_pd(f->pd));
}

static long
r_dealloc_pd_with_qp_only(struct fx *f)
{
	return CALL(f, ibv_dealloc_pd(f->pd_qp));
}

static long
r_dealloc_pd_with_ah_only(struct fx *f)
{
	return CALL(f, ibv_dealloc_pd(f->pd_ah));
}

static long
r_alloc_pd_then_dealloc(struct fx *f)
{
	struct ibv_pd *pd = ibv_alloc_pd(f->ctx);

	if (pd == NULL)
		return -100;
	return CALL(f, ibv_dealloc_pd(pd));
}

/* ---- MR ---- */

static long
r_reg_mr_remote_write_only(struct fx *f)
{
	/* ibv_reg_mr(3): REMOTE_WRITE or REMOTE_ATOMIC needs LOCAL_WRITE. */
	CALL_PTR(f, ibv_reg_mr(f->pd, f->buf, 4096, IBV_ACCESS_REMOTE_WRITE), ibv_dereg_mr);
}

static long
r_reg_mr_remote_atomic_only(struct fx *f)
{
	CALL_PTR(f, ibv_reg_mr(f->pd, f->buf, 4096, IBV_ACCESS_REMOTE_ATOMIC |
			       IBV_ACCESS_REMOTE_READ), ibv_dereg_mr);
}

static long
r_reg_mr_null_addr(struct fx *f)
{
	/* rxe: ib_umem_get() cannot pin page 0: EFAULT. */
	CALL_PTR(f, ibv_reg_mr(f->pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE), ibv_dereg_mr);
}

static long
r_reg_mr_unmapped(struct fx *f)
{
	void *hole = (void *)(uintptr_t)0x10000;	/* below mmap_min_addr: never mapped */

	CALL_PTR(f, ibv_reg_mr(f->pd, hole, 4096, IBV_ACCESS_LOCAL_WRITE), ibv_dereg_mr);
}

static long
r_reg_mr_len0(struct fx *f)
{
	/* rxe: ib_umem_get() refuses an empty range: EINVAL. */
	CALL_PTR(f, ibv_reg_mr(f->pd, f->buf, 0, IBV_ACCESS_LOCAL_WRITE), ibv_dereg_mr);
}

static long
r_reg_mr_unknown_access(struct fx *f)
{
	/* Bit 30 is outside IBV_ACCESS_OPTIONAL_RANGE: the kernel's ib_check_mr_access(). */
	CALL_PTR(f, ibv_reg_mr(f->pd, f->buf, 4096, IBV_ACCESS_LOCAL_WRITE | (1u << 30)),
		 ibv_dereg_mr);
}

static long
r_reg_mr_optional_access(struct fx *f)
{
	/* Optional bits (RELAXED_ORDERING) are dropped when unsupported: success. */
	CALL_PTR(f, ibv_reg_mr(f->pd, f->buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_RELAXED_ORDERING), ibv_dereg_mr);
}

static long
r_reg_mr_iova2_bad_access(struct fx *f)
{
	CALL_PTR(f, ibv_reg_mr_iova2(f->pd, f->buf, 4096, 0x1000,
				     IBV_ACCESS_REMOTE_WRITE), ibv_dereg_mr);
}

static long
r_reg_mr_then_dereg(struct fx *f)
{
	struct ibv_mr *mr = ibv_reg_mr(f->pd, f->buf + 4096, 8192, IBV_ACCESS_LOCAL_WRITE);

	if (mr == NULL)
		return -100;
	return CALL(f, ibv_dereg_mr(mr));
}

static long
r_alloc_mw(struct fx *f)
{
	CALL_PTR(f, ibv_alloc_mw(f->pd, IBV_MW_TYPE_1), ibv_dealloc_mw);
}

static long
r_alloc_mw_type2(struct fx *f)
{
	CALL_PTR(f, ibv_alloc_mw(f->pd, IBV_MW_TYPE_2), ibv_dealloc_mw);
}

static long
r_alloc_mw_type3(struct fx *f)
{
	/* ibv_alloc_mw(3): types 1 and 2 only; rxe answers EINVAL too */
	CALL_PTR(f, ibv_alloc_mw(f->pd, (enum ibv_mw_type)3), ibv_dealloc_mw);
}

static long
r_dealloc_pd_with_mw(struct fx *f)
{
	struct ibv_pd *pd = ibv_alloc_pd(f->ctx);
	struct ibv_mw *mw = pd != NULL ? ibv_alloc_mw(pd, IBV_MW_TYPE_2) : NULL;
	long rc;

	if (mw == NULL)
		return -100;
	rc = CALL(f, ibv_dealloc_pd(pd));
	if (ibv_dealloc_mw(mw) != 0 || ibv_dealloc_pd(pd) != 0)
		return -101;
	return rc;
}

static long
r_bind_mw_type2(struct fx *f)
{
	/* ibv_bind_mw(3) binds type 1 windows; a type 2 one is bound by a BIND_MW WR */
	struct ibv_mw *mw = ibv_alloc_mw(f->pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b = { .wr_id = 1, .bind_info = { .mr = f->mr,
		.addr = (uintptr_t)f->buf, .length = 64,
		.mw_access_flags = IBV_ACCESS_REMOTE_WRITE } };
	long rc;

	if (mw == NULL)
		return -100;
	rc = CALL(f, ibv_bind_mw(f->qp_a, mw, &b));
	ibv_dealloc_mw(mw);
	return rc;
}

static long
r_alloc_null_mr(struct fx *f)
{
	CALL_PTR(f, ibv_alloc_null_mr(f->pd), ibv_dereg_mr);
}

static long
r_advise_mr(struct fx *f)
{
	struct ibv_sge sge = { .addr = (uintptr_t)f->buf, .length = 64, .lkey = f->mr->lkey };

	return CALL(f, ibv_advise_mr(f->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1));
}

/* ---- CQ and completion channel ---- */

static long
r_create_cq_0(struct fx *f)
{
	/* rxe_cq_chk_attr(): cqe <= 0 is EINVAL. */
	CALL_PTR(f, ibv_create_cq(f->ctx, 0, NULL, NULL, 0), ibv_destroy_cq);
}

static long
r_create_cq_negative(struct fx *f)
{
	CALL_PTR(f, ibv_create_cq(f->ctx, -1, NULL, NULL, 0), ibv_destroy_cq);
}

static long
r_create_cq_over_max(struct fx *f)
{
	CALL_PTR(f, ibv_create_cq(f->ctx, f->dattr.max_cqe + 1, NULL, NULL, 0), ibv_destroy_cq);
}

static long
r_create_cq_vector(struct fx *f)
{
	/* The kernel's create_cq: comp_vector >= num_comp_vectors is EINVAL. */
	CALL_PTR(f, ibv_create_cq(f->ctx, 16, NULL, NULL, f->ctx->num_comp_vectors),
		 ibv_destroy_cq);
}

static long
r_create_cq_vector_negative(struct fx *f)
{
	CALL_PTR(f, ibv_create_cq(f->ctx, 16, NULL, NULL, -1), ibv_destroy_cq);
}

static long
r_create_cq_ex_reserved_mask(struct fx *f)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 16, .comp_mask = 1u << 5 };

	/* A comp_mask bit rdma-core does not define: EINVAL (EOPNOTSUPP, the "unsupported"
	 * answer of rxe's create_cq_ex, also accepted). */
	CALL_PTR(f, ibv_create_cq_ex(f->ctx, &a), destroy_cq_ex);
}

static long
r_create_cq_ex_wc_flags(struct fx *f)
{
	struct ibv_cq_init_attr_ex a = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_TM_INFO };

	/* rxe_create_cq_ex(): wc_flags it cannot report are EOPNOTSUPP. */
	CALL_PTR(f, ibv_create_cq_ex(f->ctx, &a), destroy_cq_ex);
}

static long
r_create_cq_ex_over_max(struct fx *f)
{
	struct ibv_cq_init_attr_ex a = { .cqe = f->dattr.max_cqe + 1 };

	CALL_PTR(f, ibv_create_cq_ex(f->ctx, &a), destroy_cq_ex);
}

static long
r_destroy_cq_busy(struct fx *f)
{
	/* ibv_create_cq(3): destroying a CQ still used by a QP fails (EBUSY). */
	return CALL(f, ibv_destroy_cq(f->cq));
}

static long
r_destroy_channel_busy(struct fx *f)
{
	/* libibverbs: a channel with CQs on it is EBUSY. */
	return CALL(f, ibv_destroy_comp_channel(f->chan));
}

static long
r_resize_cq(struct fx *f)
{
	/* ibv_resize_cq(3): the fixture's CQ, its QP attached and nothing waiting: grows */
	return CALL(f, ibv_resize_cq(f->cq, 512));
}

static long
r_resize_cq_zero(struct fx *f)
{
	return CALL(f, ibv_resize_cq(f->cq, 0));
}

static long
r_resize_cq_over_max(struct fx *f)
{
	return CALL(f, ibv_resize_cq(f->cq, f->dattr.max_cqe + 1));
}

static long
r_req_notify_cq(struct fx *f)
{
	struct ibv_cq *cq = ibv_create_cq(f->ctx, 16, NULL, NULL, 0);
	long r;

	/* Allowed without a channel (the request simply never produces an event). */
	if (cq == NULL)
		return -100;
	r = CALL(f, ibv_req_notify_cq(cq, 1));
	if (ibv_destroy_cq(cq) != 0)
		return -101;
	return r;
}

static long
r_poll_cq_zero(struct fx *f)
{
	struct ibv_wc wc;

	return CALL(f, ibv_poll_cq(f->cq, 0, &wc));
}

/* ---- SRQ ---- */

static long
r_create_srq_over_max_wr(struct fx *f)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = f->dattr.max_srq_wr + 1,
						 .max_sge = 1 } };

	CALL_PTR(f, ibv_create_srq(f->pd, &a), ibv_destroy_srq);
}

static long
r_create_srq_over_max_sge(struct fx *f)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 16,
						 .max_sge = f->dattr.max_srq_sge + 1 } };

	CALL_PTR(f, ibv_create_srq(f->pd, &a), ibv_destroy_srq);
}

static long
r_create_srq_zero_wr(struct fx *f)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 0, .max_sge = 1 } };

	/* rxe_srq_chk_init(): max_wr <= 0 is EINVAL. */
	CALL_PTR(f, ibv_create_srq(f->pd, &a), ibv_destroy_srq);
}

static long
r_create_srq_ex_xrc_no_xrcd(struct fx *f)
{
	struct ibv_srq_init_attr_ex a;

	/* ibv_create_srq_ex(3): an XRC SRQ names its XRC domain */
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = f->pd;
	a.cq = f->cq;
	CALL_PTR(f, ibv_create_srq_ex(f->ctx, &a), ibv_destroy_srq);
}

/* An XRC domain of its own, an XRC SRQ in it, its number: then both go. */
static long
r_xrc_srq_num(struct fx *f)
{
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_OFLAGS,
					 .oflags = O_CREAT };
	struct ibv_xrcd *x = ibv_open_xrcd(f->ctx, &xa);
	struct ibv_srq_init_attr_ex a;
	struct ibv_srq *srq;
	uint32_t n = 0;
	long rc;

	if (x == NULL)
		return -100;
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
		      IBV_SRQ_INIT_ATTR_XRCD;
	a.srq_type = IBV_SRQT_XRC;
	a.pd = f->pd;
	a.cq = f->cq;
	a.xrcd = x;
	srq = ibv_create_srq_ex(f->ctx, &a);
	if (srq == NULL)
		return -101;
	rc = CALL(f, ibv_get_srq_num(srq, &n));
	/* the domain is busy while its SRQ lives */
	if (n == 0 || ibv_close_xrcd(x) != EBUSY || ibv_destroy_srq(srq) != 0 ||
	    ibv_close_xrcd(x) != 0)
		return -102;
	return rc;
}

static long
r_create_srq_ex_tm(struct fx *f)
{
	struct ibv_srq_init_attr_ex a;

	/* tag matching SRQs are not offered */
	memset(&a, 0, sizeof(a));
	a.attr.max_wr = 16;
	a.attr.max_sge = 1;
	a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	a.srq_type = IBV_SRQT_TM;
	a.pd = f->pd;
	CALL_PTR(f, ibv_create_srq_ex(f->ctx, &a), ibv_destroy_srq);
}

static long
r_modify_srq_limit_over(struct fx *f)
{
	struct ibv_srq_attr a = { .srq_limit = FX_QP_WR * 1024 };

	/* ibv_modify_srq(3) / rxe_srq_chk_attr(): a limit above max_wr is EINVAL. */
	return CALL(f, ibv_modify_srq(f->srq, &a, IBV_SRQ_LIMIT));
}

static long
r_modify_srq_unknown_mask(struct fx *f)
{
	struct ibv_srq_attr a = { .srq_limit = 1 };

	return CALL(f, ibv_modify_srq(f->srq, &a, IBV_SRQ_LIMIT | (1 << 7)));
}

static long
r_destroy_srq_busy(struct fx *f)
{
	return CALL(f, ibv_destroy_srq(f->srq));
}

static long
r_get_srq_num(struct fx *f)
{
	uint32_t n;

	/* Only XRC SRQs have a number (the one XRC requests name): a basic one, EINVAL. */
	return CALL(f, ibv_get_srq_num(f->srq, &n));
}

static long
post_srq(struct fx *f, uint32_t num_sge, uint32_t lkey, uint64_t addr)
{
	struct ibv_sge sge[64];
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = sge, .num_sge = (int)num_sge };
	struct ibv_recv_wr *bad = NULL;
	uint32_t i;

	for (i = 0; i < num_sge && i < 64; i++) {
		sge[i].addr = addr;
		sge[i].length = 8;
		sge[i].lkey = lkey;
	}
	f->want_bad = &wr;
	(void)CALL(f, ibv_post_srq_recv(f->srq, &wr, &bad));
	f->bad = bad;
	return f->ret;
}

static long
r_post_srq_recv_sges(struct fx *f)
{
	return post_srq(f, FX_SGE * 8 + 1, f->mr->lkey, (uintptr_t)f->buf);
}

static long
r_post_srq_recv_lkey(struct fx *f)
{
	/* droce_shm_client.h: an lkey the MR table refuses is EINVAL at post time. */
	return post_srq(f, 1, f->mr->lkey ^ 0x5A5A00u, (uintptr_t)f->buf);
}

static long
r_post_srq_recv_outside(struct fx *f)
{
	return post_srq(f, 1, f->mr->lkey, (uintptr_t)f->buf + BUF_SIZE);
}

/* ---- QP creation ---- */

static long
create_qp_row(struct fx *f, struct ibv_qp_init_attr *ia)
{
	CALL_PTR(f, ibv_create_qp(f->pd, ia), ibv_destroy_qp);
}

static void
qia_default(struct fx *f, struct ibv_qp_init_attr *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = f->cq;
	ia->recv_cq = f->cq;
	ia->qp_type = IBV_QPT_RC;
	ia->cap.max_send_wr = 4;
	ia->cap.max_recv_wr = 4;
	ia->cap.max_send_sge = 1;
	ia->cap.max_recv_sge = 1;
}

static long
r_create_qp_send_wr(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.cap.max_send_wr = f->dattr.max_qp_wr + 1;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_recv_wr(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.cap.max_recv_wr = f->dattr.max_qp_wr + 1;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_send_sge(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.cap.max_send_sge = f->dattr.max_sge + 1;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_recv_sge(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.cap.max_recv_sge = f->dattr.max_sge + 1;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_inline(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.cap.max_inline_data = 1u << 20;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_type_xrc(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	/* An XRC initiator needs a PD and a send CQ only: ibv_create_qp makes one. */
	qia_default(f, &ia);
	ia.qp_type = IBV_QPT_XRC_SEND;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_type_bogus(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.qp_type = (enum ibv_qp_type)77;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_no_send_cq(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.send_cq = NULL;
	return create_qp_row(f, &ia);
}

static long
r_create_qp_no_recv_cq(struct fx *f)
{
	struct ibv_qp_init_attr ia;

	qia_default(f, &ia);
	ia.recv_cq = NULL;
	return create_qp_row(f, &ia);
}

static long
create_qp_ex_row(struct fx *f, struct ibv_qp_init_attr_ex *ia)
{
	CALL_PTR(f, ibv_create_qp_ex(f->ctx, ia), ibv_destroy_qp);
}

static void
qiax_default(struct fx *f, struct ibv_qp_init_attr_ex *ia)
{
	memset(ia, 0, sizeof(*ia));
	ia->send_cq = f->cq;
	ia->recv_cq = f->cq;
	ia->qp_type = IBV_QPT_RC;
	ia->cap.max_send_wr = 4;
	ia->cap.max_recv_wr = 4;
	ia->cap.max_send_sge = 1;
	ia->cap.max_recv_sge = 1;
	ia->pd = f->pd;
	ia->comp_mask = IBV_QP_INIT_ATTR_PD;
}

static long
r_create_qp_ex_create_flags(struct fx *f)
{
	struct ibv_qp_init_attr_ex ia;

	/* rxe's check_qp_init_attr(): create flags it lacks are EOPNOTSUPP. */
	qiax_default(f, &ia);
	ia.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	return create_qp_ex_row(f, &ia);
}

static long
r_create_qp_ex_rx_hash(struct fx *f)
{
	struct ibv_qp_init_attr_ex ia;

	qiax_default(f, &ia);
	ia.comp_mask |= IBV_QP_INIT_ATTR_RX_HASH;
	ia.qp_type = IBV_QPT_RAW_PACKET;
	return create_qp_ex_row(f, &ia);
}

static long
r_create_qp_ex_send_ops_local_inv(struct fx *f)
{
	struct ibv_qp_init_attr_ex ia;

	/* The memory window opcodes of the wr_* API, on an RC QP. */
	qiax_default(f, &ia);
	ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_LOCAL_INV |
			    IBV_QP_EX_WITH_BIND_MW;
	return create_qp_ex_row(f, &ia);
}

static long
r_create_qp_ex_send_ops_tso(struct fx *f)
{
	struct ibv_qp_init_attr_ex ia;

	/* rxe: send_ops_flags the provider lacks are EOPNOTSUPP (droce: no TSO). */
	qiax_default(f, &ia);
	ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	return create_qp_ex_row(f, &ia);
}

/* ---- QP modify ---- */

static long
modify(struct fx *f, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	return CALL(f, ibv_modify_qp(qp, a, mask));
}

static long
r_modify_reset_to_rtr(struct fx *f)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = f->qp_a->qp_num;
	fill_ah(f, &a.ah_attr);
	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
		      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		      IBV_QP_MIN_RNR_TIMER);
}

static long
r_modify_reset_to_rts(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static long
r_modify_init_no_port(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT };

	/* IB spec 11.2.4.2 / the kernel's ib_modify_qp_is_ok(): PORT is required. */
	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
		      IBV_QP_ACCESS_FLAGS);
}

static long
r_modify_init_port2(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 2 };

	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS);
}

static long
r_modify_init_pkey_index(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	a.pkey_index = f->pattr.pkey_tbl_len;
	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS);
}

static long
r_modify_ud_init_no_qkey(struct fx *f)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp;
	long r;

	qia_default(f, &ia);
	ia.qp_type = IBV_QPT_UD;
	qp = ibv_create_qp(f->pd, &ia);
	if (qp == NULL)
		return -100;
	r = modify(f, qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT);
	if (ibv_destroy_qp(qp) != 0)
		return -101;
	return r;
}

static long
r_modify_bad_state(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = (enum ibv_qp_state)7 };

	return modify(f, f->qp_reset, &a, IBV_QP_STATE);
}

static long
r_modify_cur_state_lie(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .cur_qp_state = IBV_QPS_RTS,
				 .port_num = 1 };

	/* RTS -> INIT is no transition (11.2.4.2). */
	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX |
		      IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static long
r_modify_unknown_mask(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	return modify(f, f->qp_reset, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS | (1 << 29));
}

/* qp_init goes to INIT once (a valid modify); the RTR rows below then start from there. */
static long
r_modify_to_init_ok(struct fx *f)
{
	return CALL(f, qp_init(f->qp_init, IBV_QPT_RC));
}

static void
rtr_attr(struct fx *f, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = f->qp_a->qp_num;
	a->rq_psn = 1;
	fill_ah(f, &a->ah_attr);
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | \
		  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)

static long
r_modify_rtr_no_av(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	return modify(f, f->qp_init, &a, RTR_MASK & ~IBV_QP_AV);
}

static long
r_modify_rtr_no_grh(struct fx *f)
{
	struct ibv_qp_attr a;

	/* verbs-abi.md: an AV without GRH on an Ethernet port is EINVAL (rxe: the kernel's
	 * rdma_ah_attr check for RoCE, "GRH required"). */
	rtr_attr(f, &a);
	a.ah_attr.is_global = 0;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_mtu0(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	a.path_mtu = (enum ibv_mtu)0;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_mtu6(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	a.path_mtu = (enum ibv_mtu)6;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_sgid_index(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	a.ah_attr.grh.sgid_index = (uint8_t)f->pattr.gid_tbl_len;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_dest_qpn(struct fx *f)
{
	struct ibv_qp_attr a;

	/* droce_shm_qp_attr.h: QPNs are 24 bits; a wider one is EINVAL. */
	rtr_attr(f, &a);
	a.dest_qp_num = 0x1000000;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_rq_psn(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	a.rq_psn = 0x1000000;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_rtr_rnr_timer(struct fx *f)
{
	struct ibv_qp_attr a;

	rtr_attr(f, &a);
	a.min_rnr_timer = 32;
	return modify(f, f->qp_init, &a, RTR_MASK);
}

static long
r_modify_init_to_rts(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7 };

	return modify(f, f->qp_init, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
		      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static long
r_modify_rts_timeout(struct fx *f)
{
	struct ibv_qp_attr a = { .timeout = 32 };

	/* RTS -> RTS with a 5-bit field out of range. */
	return modify(f, f->qp_a, &a, IBV_QP_TIMEOUT);
}

static long
r_modify_rts_retry(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .retry_cnt = 8 };

	return modify(f, f->qp_a, &a, IBV_QP_STATE | IBV_QP_RETRY_CNT);
}

static long
r_modify_rts_sq_psn(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = 0x1000000 };

	return modify(f, f->qp_a, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static long
r_modify_rts_dest_qpn(struct fx *f)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .dest_qp_num = 5 };

	/* DEST_QPN is not modifiable in RTS -> RTS (11.2.4.2). */
	return modify(f, f->qp_a, &a, IBV_QP_STATE | IBV_QP_DEST_QPN);
}

static long
r_modify_rate_limit(struct fx *f)
{
	struct ibv_qp_rate_limit_attr a = { .rate_limit = 1000 };

	return CALL(f, ibv_modify_qp_rate_limit(f->qp_a, &a));
}

/* ---- Posting ---- */

static long
post_send(struct fx *f, struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	(void)CALL(f, ibv_post_send(qp, wr, &bad));
	f->bad = bad;
	return f->ret;
}

static void
send_wr(struct fx *f, struct ibv_send_wr *wr, struct ibv_sge *sge, uint32_t len)
{
	memset(wr, 0, sizeof(*wr));
	sge->addr = (uintptr_t)f->buf;
	sge->length = len;
	sge->lkey = f->mr->lkey;
	wr->wr_id = 0xBAD;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_SEND;
	f->want_bad = wr;
}

static long
r_post_send_reset(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* ibv_post_send(3) / rxe: a QP before RTS cannot send: EINVAL, bad_wr = the WR. */
	send_wr(f, &wr, &sge, 16);
	return post_send(f, f->qp_reset, &wr);
}

static long
r_post_send_init(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	send_wr(f, &wr, &sge, 16);
	return post_send(f, f->qp_init, &wr);
}

static long
r_post_send_sges(struct fx *f)
{
	struct ibv_sge sge[FX_SGE * 8 + 1];
	struct ibv_send_wr wr;
	unsigned int i;

	send_wr(f, &wr, &sge[0], 8);
	for (i = 1; i < FX_SGE * 8 + 1; i++)
		sge[i] = sge[0];
	wr.num_sge = FX_SGE * 8 + 1;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_lkey(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* droce_shm_client.h: an lkey the MR table refuses is EINVAL at post time (rxe would
	 * complete the WR with LOC_PROT_ERR instead). */
	send_wr(f, &wr, &sge, 16);
	sge.lkey ^= 0x5A5A00u;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_outside_mr(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	send_wr(f, &wr, &sge, 64);
	sge.addr = (uintptr_t)f->buf + BUF_SIZE - 32;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_huge_len(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* Over the IB spec's 2^31-byte message limit. */
	send_wr(f, &wr, &sge, 0x80000001u);
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_local_inv(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* A memory operation on a UD QP: not an operation of its type (EINVAL). */
	send_wr(f, &wr, &sge, 0);
	wr.num_sge = 0;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = f->mr->rkey;
	return post_send(f, f->ud, &wr);
}

static long
r_post_send_atomic_len(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* An atomic's local buffer is exactly 8 bytes (rxe's validate_send_wr: EINVAL). */
	send_wr(f, &wr, &sge, 4);
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)f->buf;
	wr.wr.atomic.rkey = f->mr->rkey;
	wr.wr.atomic.compare_add = 1;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_bogus_opcode(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	send_wr(f, &wr, &sge, 16);
	wr.opcode = (enum ibv_wr_opcode)200;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_ud_rdma_write(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* UD has no RDMA: the opcode is not allowed for the QP type, EINVAL. */
	send_wr(f, &wr, &sge, 16);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.ud.ah = f->ah;
	wr.wr.ud.remote_qpn = f->ud->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	return post_send(f, f->ud, &wr);
}

static long
r_post_send_ud_sges(struct fx *f)
{
	struct ibv_sge sge[FX_SGE * 8 + 1];
	struct ibv_send_wr wr;
	unsigned int i;

	send_wr(f, &wr, &sge[0], 8);
	for (i = 1; i < FX_SGE * 8 + 1; i++)
		sge[i] = sge[0];
	wr.num_sge = FX_SGE * 8 + 1;
	wr.wr.ud.ah = f->ah;
	wr.wr.ud.remote_qpn = f->ud->qp_num;
	wr.wr.ud.remote_qkey = UD_QKEY;
	return post_send(f, f->ud, &wr);
}

static long
r_post_send_inline_long(struct fx *f)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	/* ibv_post_send(3): inline data beyond max_inline_data is EINVAL. */
	send_wr(f, &wr, &sge, f->qp_max_inline + 1);
	wr.send_flags = IBV_SEND_INLINE;
	return post_send(f, f->qp_a, &wr);
}

static long
r_post_send_second_bad(struct fx *f)
{
	struct ibv_send_wr wr[2];
	struct ibv_sge sge[2];
	struct ibv_recv_wr rwr;
	struct ibv_recv_wr *rbad;
	struct ibv_sge rsge = { .addr = (uintptr_t)f->buf + 8192, .length = 64,
				.lkey = f->mr->lkey };
	struct ibv_wc wc[4];
	struct timespec ts = { .tv_nsec = 1000000 };
	long r;
	int got = 0, i;

	/* The first WR is posted and completes; the second is refused and named by bad_wr. */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x5EC;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	if (ibv_post_recv(f->qp_b, &rwr, &rbad) != 0)
		return -100;
	send_wr(f, &wr[0], &sge[0], 16);
	send_wr(f, &wr[1], &sge[1], 16);
	wr[0].wr_id = 0x600D;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	sge[1].lkey ^= 0x5A5A00u;
	f->want_bad = &wr[1];
	r = post_send(f, f->qp_a, &wr[0]);
	/* Both completions (send, receive) come, successful, within the timeout. */
	for (i = 0; i < TIMEOUT_MS && got < 2; i++) {
		int n = ibv_poll_cq(f->cq, 4, wc), j;

		for (j = 0; j < n; j++, got++)
			if (wc[j].status != IBV_WC_SUCCESS ||
			    (wc[j].wr_id != 0x600D && wc[j].wr_id != 0x5EC)) {
				printf("  unexpected completion: %s wr_id 0x%" PRIx64 "\n",
				       ibv_wc_status_str(wc[j].status), wc[j].wr_id);
				return -101;
			}
		if (n == 0)
			nanosleep(&ts, NULL);
	}
	if (got != 2) {
		printf("  %d of 2 completions of the good WR came\n", got);
		return -102;
	}
	return r;
}

static long
post_recv(struct fx *f, struct ibv_qp *qp, uint32_t num_sge, uint32_t lkey)
{
	struct ibv_sge sge[64];
	struct ibv_recv_wr wr = { .wr_id = 2, .sg_list = sge, .num_sge = (int)num_sge };
	struct ibv_recv_wr *bad = NULL;
	uint32_t i;

	for (i = 0; i < num_sge && i < 64; i++) {
		sge[i].addr = (uintptr_t)f->buf;
		sge[i].length = 8;
		sge[i].lkey = lkey;
	}
	f->want_bad = &wr;
	(void)CALL(f, ibv_post_recv(qp, &wr, &bad));
	f->bad = bad;
	return f->ret;
}

static long
r_post_recv_sges(struct fx *f)
{
	return post_recv(f, f->qp_a, FX_SGE * 8 + 1, f->mr->lkey);
}

static long
r_post_recv_lkey(struct fx *f)
{
	return post_recv(f, f->qp_a, 1, f->mr->lkey ^ 0x5A5A00u);
}

static long
r_post_recv_reset(struct fx *f)
{
	/* rxe_post_recv(): a QP in RESET takes no receive: EINVAL. */
	return post_recv(f, f->qp_reset, 1, f->mr->lkey);
}

static long
r_post_recv_on_srq_qp(struct fx *f)
{
	/* ibv_post_recv(3): a QP attached to an SRQ has no receive queue of its own. */
	return post_recv(f, f->qp_srq, 1, f->mr->lkey);
}

/* ---- AH, multicast, ECE ---- */

static long
r_create_ah_no_grh(struct fx *f)
{
	struct ibv_ah_attr a;

	fill_ah(f, &a);
	a.is_global = 0;
	CALL_PTR(f, ibv_create_ah(f->pd, &a), ibv_destroy_ah);
}

static long
r_create_ah_sgid_index(struct fx *f)
{
	struct ibv_ah_attr a;

	fill_ah(f, &a);
	a.grh.sgid_index = (uint8_t)f->pattr.gid_tbl_len;
	CALL_PTR(f, ibv_create_ah(f->pd, &a), ibv_destroy_ah);
}

static long
r_create_ah_port2(struct fx *f)
{
	struct ibv_ah_attr a;

	fill_ah(f, &a);
	a.port_num = 2;
	CALL_PTR(f, ibv_create_ah(f->pd, &a), ibv_destroy_ah);
}

static long
r_create_ah_flow_label_32bit(struct fx *f)
{
	struct ibv_ah_attr a;

	/* UCX passes ~0: the kernel and NICs keep the GRH field's 20 bits, not EINVAL. */
	fill_ah(f, &a);
	a.grh.flow_label = 0xFFFFFFFFu;
	CALL_PTR(f, ibv_create_ah(f->pd, &a), ibv_destroy_ah);
}

static long
r_create_ah_unreachable(struct fx *f)
{
	static const uint8_t off_subnet[16] = {	/* ::ffff:203.0.113.77 (TEST-NET-3) */
		[10] = 0xff, [11] = 0xff, 203, 0, 113, 77 };
	struct ibv_ah_attr a;

	/* A destination no route or neighbour reaches: droced answers EHOSTUNREACH. */
	fill_ah(f, &a);
	memcpy(a.grh.dgid.raw, off_subnet, sizeof(off_subnet));
	CALL_PTR(f, ibv_create_ah(f->pd, &a), ibv_destroy_ah);
}

/* ibv_attach_mcast(3): the UD QP joins ff0e::1; again: no change (0); then it leaves. */
static long
r_attach_mcast(struct fx *f)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x0e, [15] = 1 } };
	long rc = CALL(f, ibv_attach_mcast(f->ud, &mgid, 0));

	if (rc != 0 || ibv_attach_mcast(f->ud, &mgid, 0) != 0 ||
	    ibv_detach_mcast(f->ud, &mgid, 0) != 0)
		return rc != 0 ? rc : -100;
	return rc;
}

/*
 * rdma-core 45's ibv_qp_ex: 44's with wr_flush appended, where a program built against 45
 * or later calls it (Debian 12's headers end at wr_atomic_write).
 */
struct qp_ex_45 {
	struct ibv_qp_ex x;
	void (*wr_flush)(struct ibv_qp_ex *qp, uint32_t rkey, uint64_t remote_addr, size_t len,
			 uint8_t type, uint8_t level);
};

/*
 * A loopback RC pair made with ibv_create_qp_ex for ATOMIC WRITE and FLUSH: the 8 bytes
 * land, a FLUSH of both placement types (IBV_FLUSH_GLOBAL | IBV_FLUSH_PERSISTENT, range)
 * completes after it, through the wr_flush slot a rdma-core 45 program calls.
 */
static long
r_atomic_write_and_flush(struct fx *f)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *q[2];
	struct ibv_qp_ex *qx;
	struct ibv_qp_attr at = { .qp_access_flags = IBV_ACCESS_LOCAL_WRITE |
				  IBV_ACCESS_REMOTE_WRITE | (1u << 8) | (1u << 9) };
	struct ibv_mr *mr;
	struct ibv_wc wc[2];
	uint64_t v = 0x1122334455667788ull;
	struct timespec ts = { .tv_nsec = 1000000 };
	int i, got = 0;
	long rc = 0;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = ia.recv_cq = f->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.pd = f->pd;
	ia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE | (1ull << 11);
	q[0] = ibv_create_qp_ex(f->ctx, &ia);
	q[1] = ibv_create_qp_ex(f->ctx, &ia);
	mr = ibv_reg_mr(f->pd, f->buf + 16384, 4096, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | (1u << 8) | (1u << 9));
	if (q[0] == NULL || q[1] == NULL || mr == NULL ||
	    rc_connect(f, q[0], q[1]->qp_num, PSN_B, PSN_A) != 0 ||
	    rc_connect(f, q[1], q[0]->qp_num, PSN_A, PSN_B) != 0 ||
	    ibv_modify_qp(q[1], &at, IBV_QP_ACCESS_FLAGS) != 0)
		return -100;
	memset(f->buf + 16384, 0, 64);
	qx = ibv_qp_to_qp_ex(q[0]);
	ibv_wr_start(qx);
	qx->wr_id = 0xA1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qx, mr->rkey, (uintptr_t)f->buf + 16384 + 8, &v);
	qx->wr_id = 0xF1;
	((struct qp_ex_45 *)qx)->wr_flush(qx, mr->rkey, (uintptr_t)f->buf + 16384, 64, 3, 0);
	rc = CALL(f, ibv_wr_complete(qx));
	for (i = 0; rc == 0 && i < TIMEOUT_MS && got < 2; i++) {
		int n = ibv_poll_cq(f->cq, 2 - got, wc + got);

		got += n > 0 ? n : 0;
		if (n == 0)
			nanosleep(&ts, NULL);
	}
	/* IBV_WC_ATOMIC_WRITE (9), then rdma-core 45's IBV_WC_FLUSH (8) */
	if (rc == 0 && (got != 2 || wc[0].status != IBV_WC_SUCCESS || wc[0].wr_id != 0xA1 ||
			wc[0].opcode != IBV_WC_ATOMIC_WRITE || wc[1].status != IBV_WC_SUCCESS ||
			wc[1].wr_id != 0xF1 || (int)wc[1].opcode != 8 ||
			memcmp(f->buf + 16384 + 8, &v, 8) != 0))
		rc = -101;
	if (ibv_destroy_qp(q[0]) != 0 || ibv_destroy_qp(q[1]) != 0 || ibv_dereg_mr(mr) != 0)
		rc = -102;
	return rc;
}

static long
r_attach_mcast_ipv4(struct fx *f)
{
	union ibv_gid mgid = { .raw = { [10] = 0xff, [11] = 0xff, 239, 1, 1, 1 } };
	long rc = CALL(f, ibv_attach_mcast(f->ud, &mgid, 0));

	if (rc == 0 && ibv_detach_mcast(f->ud, &mgid, 0) != 0)
		return -100;
	return rc;
}

static long
r_attach_mcast_unicast_gid(struct fx *f)
{
	/* a unicast GID (the port's own): the kernel's rdma_is_multicast_addr() check */
	return CALL(f, ibv_attach_mcast(f->ud, &f->gid0, 0));
}

static long
r_attach_mcast_rc(struct fx *f)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x0e, [15] = 1 } };

	/* only UD QPs receive multicast */
	return CALL(f, ibv_attach_mcast(f->qp_a, &mgid, 0));
}

static long
r_detach_mcast(struct fx *f)
{
	union ibv_gid mgid = { .raw = { 0xff, 0x0e, [15] = 2 } };

	/* not attached to that group */
	return CALL(f, ibv_detach_mcast(f->ud, &mgid, 0));
}

static long
r_query_ece(struct fx *f)
{
	struct ibv_ece ece;

	/* libibverbs: no query_ece op -> EOPNOTSUPP. */
	return CALL(f, ibv_query_ece(f->qp_a, &ece));
}

static long
r_set_ece(struct fx *f)
{
	struct ibv_ece ece = { .vendor_id = 1 };

	return CALL(f, ibv_set_ece(f->qp_reset, &ece));
}

#define ROW(fn, rc, err, alt) { &(#fn)[2], fn, rc, err, alt }

/*
 * Row order matters where a row changes state: r_modify_to_init_ok moves qp_init to INIT
 * for the RTR rows after it; everything else leaves the fixture as it found it.
 */
static const struct row rows[] = {
	/* Device, port, GIDs, P_Keys, events */
	ROW(r_query_port_0, EINVAL, ERR_ANY, 0),
	ROW(r_query_port_2, EINVAL, ERR_ANY, 0),
	ROW(r_query_port_255, EINVAL, ERR_ANY, 0),
	ROW(r_query_device_ex_mask, EINVAL, ERR_ANY, 0),
	ROW(r_query_gid_port0, -1, EINVAL, 0),
	ROW(r_query_gid_past_table, -1, EINVAL, 0),
	ROW(r_query_gid_negative, -1, EINVAL, 0),
	ROW(r_query_gid_empty, 0, ERR_ANY, 0),
	ROW(r_query_gid_ex_past_table, EINVAL, ERR_ANY, 0),
	ROW(r_query_gid_ex_empty, ENODATA, ERR_ANY, 0),
	ROW(r_query_gid_ex_port2, EINVAL, ERR_ANY, 0),
	ROW(r_query_gid_ex_flags, EINVAL, ERR_ANY, EOPNOTSUPP),
	ROW(r_query_gid_table_flags, -EINVAL, ERR_ANY, 0),
	/* rdma-core reads P_Keys from sysfs: a missing entry is -1 with ENOENT there. */
	ROW(r_query_pkey_past_table, -1, EINVAL, ENOENT),
	ROW(r_query_pkey_port2, -1, EINVAL, ENOENT),
	ROW(r_get_pkey_index_unknown, -1, ERR_ANY, 0),
	ROW(r_async_event_empty, -1, EAGAIN, 0),
	ROW(r_cq_event_empty, -1, EAGAIN, 0),
	ROW(r_alloc_td, 0, EOPNOTSUPP, 0),
	ROW(r_alloc_dm, 0, EOPNOTSUPP, 0),
	ROW(r_open_xrcd, 1, ERR_ANY, 0),
	ROW(r_create_counters, 0, EOPNOTSUPP, 0),
	ROW(r_create_wq, 0, EOPNOTSUPP, 0),
	ROW(r_create_flow, 0, EOPNOTSUPP, 0),
	/* PD */
	ROW(r_dealloc_pd_with_mr_qp, EBUSY, ERR_ANY, 0),
	ROW(r_dealloc_pd_with_qp_only, EBUSY, ERR_ANY, 0),
	ROW(r_dealloc_pd_with_ah_only, EBUSY, ERR_ANY, 0),
	ROW(r_alloc_pd_then_dealloc, 0, ERR_ANY, 0),
	/* MR */
	ROW(r_reg_mr_remote_write_only, 0, EINVAL, 0),
	ROW(r_reg_mr_remote_atomic_only, 0, EINVAL, 0),
	ROW(r_reg_mr_null_addr, 0, EFAULT, 0),
	ROW(r_reg_mr_unmapped, 0, EFAULT, 0),
	ROW(r_reg_mr_len0, 0, EINVAL, 0),
	ROW(r_reg_mr_unknown_access, 0, EINVAL, 0),
	ROW(r_reg_mr_optional_access, 1, ERR_ANY, 0),
	ROW(r_reg_mr_iova2_bad_access, 0, EINVAL, 0),
	ROW(r_reg_mr_then_dereg, 0, ERR_ANY, 0),
	ROW(r_alloc_mw, 1, ERR_ANY, 0),
	ROW(r_alloc_mw_type2, 1, ERR_ANY, 0),
	ROW(r_alloc_mw_type3, 0, EINVAL, 0),
	ROW(r_dealloc_pd_with_mw, EBUSY, ERR_ANY, 0),
	ROW(r_bind_mw_type2, EINVAL, ERR_ANY, 0),
	ROW(r_alloc_null_mr, 0, EOPNOTSUPP, 0),
	ROW(r_advise_mr, EOPNOTSUPP, ERR_ANY, 0),
	/* CQ, completion channel */
	ROW(r_create_cq_0, 0, EINVAL, 0),
	ROW(r_create_cq_negative, 0, EINVAL, 0),
	ROW(r_create_cq_over_max, 0, EINVAL, 0),
	ROW(r_create_cq_vector, 0, EINVAL, 0),
	ROW(r_create_cq_vector_negative, 0, EINVAL, 0),
	ROW(r_create_cq_ex_reserved_mask, 0, EINVAL, EOPNOTSUPP),
	ROW(r_create_cq_ex_wc_flags, 0, EOPNOTSUPP, 0),
	ROW(r_create_cq_ex_over_max, 0, EINVAL, EOPNOTSUPP),
	ROW(r_destroy_cq_busy, EBUSY, ERR_ANY, 0),
	ROW(r_destroy_channel_busy, EBUSY, ERR_ANY, 0),
	ROW(r_resize_cq, 0, ERR_ANY, 0),
	ROW(r_resize_cq_zero, EINVAL, ERR_ANY, 0),
	ROW(r_resize_cq_over_max, EINVAL, ERR_ANY, 0),
	ROW(r_req_notify_cq, 0, ERR_ANY, 0),
	ROW(r_poll_cq_zero, 0, ERR_ANY, 0),
	/* SRQ */
	ROW(r_create_srq_over_max_wr, 0, EINVAL, 0),
	ROW(r_create_srq_over_max_sge, 0, EINVAL, 0),
	ROW(r_create_srq_zero_wr, 0, EINVAL, 0),
	ROW(r_create_srq_ex_xrc_no_xrcd, 0, EINVAL, 0),
	ROW(r_xrc_srq_num, 0, ERR_ANY, 0),
	ROW(r_create_srq_ex_tm, 0, EOPNOTSUPP, 0),
	ROW(r_modify_srq_limit_over, EINVAL, ERR_ANY, 0),
	ROW(r_modify_srq_unknown_mask, EINVAL, ERR_ANY, 0),
	ROW(r_destroy_srq_busy, EBUSY, ERR_ANY, 0),
	ROW(r_get_srq_num, EINVAL, ERR_ANY, 0),
	ROW(r_post_srq_recv_sges, EINVAL, ERR_ANY, 0),
	ROW(r_post_srq_recv_lkey, EINVAL, ERR_ANY, 0),
	ROW(r_post_srq_recv_outside, EINVAL, ERR_ANY, 0),
	/* QP creation */
	ROW(r_create_qp_send_wr, 0, EINVAL, 0),
	ROW(r_create_qp_recv_wr, 0, EINVAL, 0),
	ROW(r_create_qp_send_sge, 0, EINVAL, 0),
	ROW(r_create_qp_recv_sge, 0, EINVAL, 0),
	ROW(r_create_qp_inline, 0, EINVAL, 0),
	ROW(r_create_qp_type_xrc, 1, ERR_ANY, 0),
	ROW(r_create_qp_type_bogus, 0, EINVAL, EOPNOTSUPP),
	ROW(r_create_qp_no_send_cq, 0, EINVAL, 0),
	ROW(r_create_qp_no_recv_cq, 0, EINVAL, 0),
	ROW(r_create_qp_ex_create_flags, 0, EOPNOTSUPP, 0),
	ROW(r_create_qp_ex_rx_hash, 0, EOPNOTSUPP, 0),
	ROW(r_create_qp_ex_send_ops_local_inv, 1, ERR_ANY, 0),
	ROW(r_create_qp_ex_send_ops_tso, 0, EOPNOTSUPP, 0),
	/* QP modify */
	ROW(r_modify_reset_to_rtr, EINVAL, ERR_ANY, 0),
	ROW(r_modify_reset_to_rts, EINVAL, ERR_ANY, 0),
	ROW(r_modify_init_no_port, EINVAL, ERR_ANY, 0),
	ROW(r_modify_init_port2, EINVAL, ERR_ANY, 0),
	ROW(r_modify_init_pkey_index, EINVAL, ERR_ANY, 0),
	ROW(r_modify_ud_init_no_qkey, EINVAL, ERR_ANY, 0),
	ROW(r_modify_bad_state, EINVAL, ERR_ANY, 0),
	ROW(r_modify_cur_state_lie, EINVAL, ERR_ANY, 0),
	/* The kernel's modify_qp: attr_mask bits beyond the standard ones are EOPNOTSUPP. */
	ROW(r_modify_unknown_mask, EINVAL, ERR_ANY, EOPNOTSUPP),
	ROW(r_modify_to_init_ok, 0, ERR_ANY, 0),
	ROW(r_modify_rtr_no_av, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_no_grh, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_mtu0, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_mtu6, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_sgid_index, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_dest_qpn, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_rq_psn, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rtr_rnr_timer, EINVAL, ERR_ANY, 0),
	ROW(r_modify_init_to_rts, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rts_timeout, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rts_retry, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rts_sq_psn, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rts_dest_qpn, EINVAL, ERR_ANY, 0),
	ROW(r_modify_rate_limit, EOPNOTSUPP, ERR_ANY, 0),
	/* Posting: every refused WR is named by bad_wr */
	ROW(r_post_send_reset, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_init, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_sges, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_lkey, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_outside_mr, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_huge_len, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_local_inv, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_atomic_len, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_bogus_opcode, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_ud_rdma_write, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_ud_sges, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_inline_long, EINVAL, ERR_ANY, 0),
	ROW(r_post_send_second_bad, EINVAL, ERR_ANY, 0),
	ROW(r_post_recv_sges, EINVAL, ERR_ANY, 0),
	ROW(r_post_recv_lkey, EINVAL, ERR_ANY, 0),
	ROW(r_post_recv_reset, EINVAL, ERR_ANY, 0),
	ROW(r_post_recv_on_srq_qp, EINVAL, ERR_ANY, 0),
	/* AH, multicast (not implemented), ECE (not implemented) */
	ROW(r_create_ah_no_grh, 0, EINVAL, 0),
	ROW(r_create_ah_sgid_index, 0, EINVAL, 0),
	ROW(r_create_ah_port2, 0, EINVAL, 0),
	ROW(r_create_ah_flow_label_32bit, 1, ERR_ANY, 0),
	ROW(r_create_ah_unreachable, 0, EHOSTUNREACH, 0),
	ROW(r_attach_mcast, 0, ERR_ANY, 0),
	ROW(r_attach_mcast_ipv4, 0, ERR_ANY, 0),
	ROW(r_atomic_write_and_flush, 0, ERR_ANY, 0),
	ROW(r_attach_mcast_unicast_gid, EINVAL, ERR_ANY, 0),
	ROW(r_attach_mcast_rc, EINVAL, ERR_ANY, 0),
	ROW(r_detach_mcast, EINVAL, ERR_ANY, 0),
	ROW(r_query_ece, EOPNOTSUPP, ERR_ANY, 0),
	ROW(r_set_ece, EOPNOTSUPP, ERR_ANY, 0),
};

static bool
is_post_row(long (*fn)(struct fx *))
{
	return fn == r_post_send_reset || fn == r_post_send_init || fn == r_post_send_sges ||
	       fn == r_post_send_lkey || fn == r_post_send_outside_mr ||
	       fn == r_post_send_huge_len ||
	       fn == r_post_send_local_inv || fn == r_post_send_atomic_len ||
	       fn == r_post_send_bogus_opcode ||
	       fn == r_post_send_ud_rdma_write || fn == r_post_send_ud_sges ||
	       fn == r_post_send_inline_long || fn == r_post_send_second_bad ||
	       fn == r_post_recv_sges || fn == r_post_recv_lkey || fn == r_post_recv_reset ||
	       fn == r_post_recv_on_srq_qp || fn == r_post_srq_recv_sges ||
	       fn == r_post_srq_recv_lkey || fn == r_post_srq_recv_outside;
}

static bool
run_row(struct fx *f, const struct row *r)
{
	long rc;
	bool ok;

	f->err = 0;
	f->bad = NULL;
	f->want_bad = NULL;
	rc = r->fn(f);
	if (rc == SKIP) {
		printf("skip %s: precondition missing on this device\n", r->name);
		return true;
	}
	if (r->want_err == ERR_ANY)
		ok = rc == r->want_rc || (r->alt != 0 && rc == r->alt);
	else
		ok = rc == r->want_rc && (f->err == r->want_err || (r->alt != 0 &&
							       f->err == r->alt));
	if (ok && is_post_row(r->fn) && rc != 0 && f->bad != f->want_bad) {
		printf("FAIL %s: bad_wr %p, want %p (the refused WR)\n", r->name, f->bad,
		       f->want_bad);
		return false;
	}
	if (ok) {
		printf("ok %s (rc=%ld errno=%d %s)\n", r->name, rc, f->err,
		       f->err != 0 ? strerror(f->err) : "");
		return true;
	}
	if (r->want_err == ERR_ANY)
		printf("FAIL %s: got rc=%ld errno=%d (%s) want rc=%ld%s%s\n", r->name, rc, f->err,
		       strerror(f->err), r->want_rc, r->alt ? " or " : "",
		       r->alt ? strerror(r->alt) : "");
	else
		printf("FAIL %s: got rc=%ld errno=%d (%s) want rc=%ld errno=%d (%s)%s%s\n",
		       r->name, rc, f->err, strerror(f->err), r->want_rc, r->want_err,
		       strerror(r->want_err), r->alt ? " or " : "",
		       r->alt ? strerror(r->alt) : "");
	return false;
}

/* Destroys the fixture; every destroy must return 0. Returns the number that did not. */
static int
fx_close(struct fx *f)
{
	struct ibv_wc wc[16];
	int bad = 0;

#define DESTROY(obj, call) do {							\
		if ((obj) != NULL) {						\
			int r_ = (call);					\
			if (r_ != 0) {						\
				printf("FAIL teardown: %s: %d (%s)\n", #call, r_,	\
				       strerror(r_ > 0 ? r_ : errno));		\
				bad++;						\
			}							\
		}								\
	} while (0)

	if (f->cq != NULL)
		while (ibv_poll_cq(f->cq, 16, wc) > 0)
			;
	DESTROY(f->ah, ibv_destroy_ah(f->ah));
	DESTROY(f->ah_pd, ibv_destroy_ah(f->ah_pd));
	DESTROY(f->qp_reset, ibv_destroy_qp(f->qp_reset));
	DESTROY(f->qp_init, ibv_destroy_qp(f->qp_init));
	DESTROY(f->qp_a, ibv_destroy_qp(f->qp_a));
	DESTROY(f->qp_b, ibv_destroy_qp(f->qp_b));
	DESTROY(f->ud, ibv_destroy_qp(f->ud));
	DESTROY(f->qp_srq, ibv_destroy_qp(f->qp_srq));
	DESTROY(f->qp_pd, ibv_destroy_qp(f->qp_pd));
	DESTROY(f->srq, ibv_destroy_srq(f->srq));
	DESTROY(f->mr, ibv_dereg_mr(f->mr));
	DESTROY(f->cq, ibv_destroy_cq(f->cq));
	DESTROY(f->chan, ibv_destroy_comp_channel(f->chan));
	DESTROY(f->pd, ibv_dealloc_pd(f->pd));
	DESTROY(f->pd_qp, ibv_dealloc_pd(f->pd_qp));
	DESTROY(f->pd_ah, ibv_dealloc_pd(f->pd_ah));
	DESTROY(f->pd_free, ibv_dealloc_pd(f->pd_free));
	DESTROY(f->ctx, ibv_close_device(f->ctx));
#undef DESTROY
	free(f->buf);
	return bad;
}

int
main(int argc, char **argv)
{
	struct fx f;
	unsigned int i, pass = 0, fail = 0;
	int bad_teardown;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		printf("usage: %s [ROW...]\n"
		       "Calls every verb with invalid arguments on the first device and checks\n"
		       "the errno rdma-core documents. With ROW names, runs only those rows.\n"
		       "exit 0: every row passed and every object was destroyed cleanly.\n",
		       argv[0]);
		return 0;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&f, 0, sizeof(f));
	if (fx_open(&f) != 0) {
		fx_close(&f);
		return 1;
	}
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int k;
		bool selected = argc <= 1;

		for (k = 1; k < argc; k++)
			if (strcmp(argv[k], rows[i].name) == 0)
				selected = true;
		if (!selected)
			continue;
		if (run_row(&f, &rows[i]))
			pass++;
		else
			fail++;
	}
	bad_teardown = fx_close(&f);
	printf("%u rows: %u passed, %u failed; teardown %s\n", pass + fail, pass, fail,
	       bad_teardown == 0 ? "clean" : "FAILED");
	return fail == 0 && bad_teardown == 0 ? 0 : 1;
}
