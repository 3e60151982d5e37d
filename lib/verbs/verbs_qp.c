/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * Queue pairs: create (droced picks the engine, the doorbell slot and the rings and says
 * what it honours), modify and query (ibv_qp_attr <-> droce_shm_qp_attr; droced applies the
 * change through the owning engine), destroy, and the post paths of context->ops, which
 * are droce_shm_post_send/recv under the QP's send or receive spinlock: no system call.
 * Every QP is allocated as an ibv_qp_ex; one created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
 * gets the wr_* API (verbs_qp_wr.c), which gathers ibv_send_wrs in a per-QP batch that
 * wr_complete posts.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce_verbs.h"
#include "verbs_loc.h"

/* The send opcodes the wr_* API can build: everything a send WQE carries. */
#define QP_EX_SEND_OPS	(IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
			 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | \
			 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV | \
			 IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW | \
			 VERBS_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)
#define QP_INIT_MASKS	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | \
			 IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD)
/* enum ibv_qp_attr_mask bits droce knows (droce_shm_qp_mask); others -> EINVAL. */
#define QP_ATTR_MASKS	((1u << 21) - 1 - IBV_QP_ALT_PATH - IBV_QP_PATH_MIG_STATE)

/* ---- Fast path (the posting thread, under the QP's send or receive lock) ---- */

int
verbs_qp_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct verbs_dqp *qp = to_dqp(ibqp);
	struct ibv_send_wr *bad = NULL;
	int ret;

	pthread_spin_lock(&qp->sq_lock);
	/* Checked under the ring lock: verbs_fatal flushes what got in before. */
	if (verbs_dead(to_dctx(ibqp->context))) {
		bad = wr;
		ret = EIO;
	} else {
		ret = droce_shm_post_send(&qp->view, wr, &bad);
	}
	pthread_spin_unlock(&qp->sq_lock);
	if (bad_wr != NULL)
		*bad_wr = bad;
	return ret;
}

int
verbs_qp_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct verbs_dqp *qp = to_dqp(ibqp);
	struct ibv_recv_wr *bad = NULL;
	int ret;

	pthread_spin_lock(&qp->rq_lock);
	if (verbs_dead(to_dctx(ibqp->context))) {
		bad = wr;
		ret = EIO;
	} else {
		ret = droce_shm_post_recv(&qp->view, wr, &bad);
	}
	pthread_spin_unlock(&qp->rq_lock);
	if (bad_wr != NULL)
		*bad_wr = bad;
	return ret;
}

/* ---- Create / destroy ---- */

static void
qp_free(struct verbs_dqp *qp)
{
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	pthread_mutex_destroy(&qp->qpx.qp_base.mutex);
	pthread_cond_destroy(&qp->qpx.qp_base.cond);
	free(qp->batch);
	free(qp->batch_sge);
	free(qp->batch_inline);
	free(qp);
}

static bool
pow2(uint32_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

/* Checks CREATE_QP's answer before its offsets become pointers. */
/* The QP joins the list async events and a dead daemon's flush find QPs in. */
static void
qp_list_add(struct verbs_dctx *c, struct verbs_dqp *qp)
{
	pthread_mutex_lock(&c->obj_lock);
	qp->next = c->qps;
	c->qps = qp;
	pthread_mutex_unlock(&c->obj_lock);
}

static void
qp_list_del(struct verbs_dctx *c, struct verbs_dqp *qp)
{
	struct verbs_dqp **pp;

	pthread_mutex_lock(&c->obj_lock);
	for (pp = &c->qps; *pp != NULL; pp = &(*pp)->next)
		if (*pp == qp) {
			*pp = qp->next;
			break;
		}
	verbs_async_forget(c);
	pthread_mutex_unlock(&c->obj_lock);
}

static int
qp_resp_check(const struct verbs_dctx *c, const struct droce_proto_resp *r, bool has_srq)
{
	const struct droce_shm_region_hdr *hdr = (const void *)c->region;
	uint64_t db_off;

	if (r->qp.engine_id >= c->nb_engines || r->qp.db_slot >= DROCE_SHM_DB_SLOTS ||
	    !pow2(r->qp.sq_size) || r->qp.sq_size > DROCE_SHM_MAX_WR ||
	    r->qp.sq_stride > DROCE_SHM_MAX_SQ_STRIDE ||
	    r->qp.cap.max_send_sge > DROCE_SHM_MAX_SGE ||
	    r->qp.cap.max_recv_sge > DROCE_SHM_MAX_SGE ||
	    r->qp.cap.max_inline_data > DROCE_SHM_MAX_INLINE ||
	    r->qp.sq_stride < droce_shm_sq_stride(r->qp.cap.max_send_sge,
						  r->qp.cap.max_inline_data) ||
	    !verbs_region_ok(c, r->qp.ctl_off, sizeof(struct droce_shm_qp)) ||
	    !verbs_region_ok(c, r->qp.sq_off, (uint64_t)r->qp.sq_size * r->qp.sq_stride))
		return EPROTO;
	if (!has_srq && (!pow2(r->qp.rq_size) || r->qp.rq_size > DROCE_SHM_MAX_WR ||
			 r->qp.rq_stride < droce_shm_rq_stride(r->qp.cap.max_recv_sge) ||
			 !verbs_region_ok(c, r->qp.rq_off,
					  (uint64_t)r->qp.rq_size * r->qp.rq_stride)))
		return EPROTO;
	db_off = hdr->doorbell_off[r->qp.engine_id];
	if (!verbs_region_ok(c, db_off, sizeof(struct droce_shm_doorbell)))
		return EPROTO;
	return 0;
}

/*
 * send_ops_flags asks for wr_* opcodes: each must be one the engine implements (droced's
 * supported_wr for this QP), else ibv_create_qp_ex fails with EOPNOTSUPP, so a program
 * learns at create time rather than at its first post.
 */
static bool
send_ops_supported(const struct ibv_qp_init_attr_ex *a, uint32_t supported_wr)
{
	static const struct {
		uint64_t op;
		enum ibv_wr_opcode wr;
	} map[] = {
		{ IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE },
		{ IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM },
		{ IBV_QP_EX_WITH_SEND, IBV_WR_SEND },
		{ IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM },
		{ IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ },
		{ IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP },
		{ IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD },
		{ IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV },
		{ IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV },
		{ IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW },
		{ VERBS_QP_EX_WITH_FLUSH, (enum ibv_wr_opcode)DROCE_SHM_WR_FLUSH },
		{ IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_WR_ATOMIC_WRITE },
	};
	size_t i;

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))
		return true;
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if ((a->send_ops_flags & map[i].op) && !(supported_wr & (1u << map[i].wr)))
			return false;
	return true;
}

/* The checks of ibv_create_qp(3) that need no daemon: EINVAL, EOPNOTSUPP. */
static int
qp_init_check(struct ibv_context *context, const struct ibv_qp_init_attr_ex *a)
{
	const struct droce_proto_limits *l = &to_dctx(context)->limits;

	if (a->comp_mask & ~(uint32_t)QP_INIT_MASKS)
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags != 0)
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~(uint64_t)QP_EX_SEND_OPS))
		return EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    a->qp_type != IBV_QPT_XRC_SEND && a->qp_type != IBV_QPT_XRC_RECV)
		return EOPNOTSUPP;
	/* An XRC target has an XRC domain instead of a PD, CQs and queues (ibv_create_qp(3)). */
	if (a->qp_type == IBV_QPT_XRC_RECV)
		return (a->comp_mask & IBV_QP_INIT_ATTR_XRCD) && a->xrcd != NULL &&
		       a->xrcd->context == context ? 0 : EINVAL;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || a->pd == NULL ||
	    a->pd->context != context)
		return EINVAL;
	/* An XRC initiator has no receive side: its recv_cq and srq are not looked at. */
	if (a->qp_type == IBV_QPT_XRC_SEND) {
		if (a->send_cq == NULL || a->send_cq->context != context ||
		    a->cap.max_send_wr > l->max_qp_wr || a->cap.max_send_sge > l->max_sge ||
		    a->cap.max_inline_data > l->max_inline)
			return EINVAL;
		return 0;
	}
	if (a->send_cq == NULL || a->recv_cq == NULL || a->send_cq->context != context ||
	    a->recv_cq->context != context || (a->srq != NULL && a->srq->context != context))
		return EINVAL;
	if (a->cap.max_send_wr > l->max_qp_wr || a->cap.max_send_sge > l->max_sge ||
	    a->cap.max_inline_data > l->max_inline)
		return EINVAL;
	if (a->srq == NULL && (a->cap.max_recv_wr > l->max_qp_wr ||
			       a->cap.max_recv_sge > l->max_sge))
		return EINVAL;
	return 0;
}

/*
 * The engine's wake-up eventfd that came with CREATE_QP: the context keeps the first for
 * each engine (its QPs' doorbells write it, droce_shm_doorbell.sleeping) and closes the
 * copies that later QPs bring.
 */
static void
qp_wake_fd_keep(struct verbs_dctx *c, uint32_t engine_id, int fd)
{
	int none = -1;

	if (engine_id >= DROCE_SHM_MAX_ENGINES ||
	    !__atomic_compare_exchange_n(&c->wake_fd[engine_id], &none, fd, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		close(fd);
}

/* init_port not 0: droced moves the QP to INIT on that port before it answers. */
static struct ibv_qp *
qp_create(struct ibv_context *context, struct ibv_qp_init_attr_ex *a, uint8_t init_port)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_CREATE_QP };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct ibv_qp *ib;
	struct verbs_dqp *qp;
	unsigned int nfds = 0;
	int ret, wake_fd = -1;
	bool xrc_ini, xrc_tgt, own_rq;

	if (context == NULL || a == NULL)
		return verbs_err_null(EINVAL);
	ret = qp_init_check(context, a);
	if (ret != 0)
		return verbs_err_null(ret);
	c = to_dctx(context);
	xrc_ini = a->qp_type == IBV_QPT_XRC_SEND;
	xrc_tgt = a->qp_type == IBV_QPT_XRC_RECV;
	own_rq = a->srq == NULL && !xrc_ini && !xrc_tgt;
	qp = calloc(1, sizeof(*qp));
	if (qp == NULL)
		return verbs_err_null(ENOMEM);
	req.create_qp.pd = xrc_tgt ? DROCE_PROTO_NO_HANDLE : a->pd->handle;
	req.create_qp.send_cq = xrc_tgt ? DROCE_PROTO_NO_HANDLE : a->send_cq->handle;
	req.create_qp.recv_cq = xrc_ini || xrc_tgt ? DROCE_PROTO_NO_HANDLE : a->recv_cq->handle;
	req.create_qp.srq = a->srq != NULL && !xrc_ini && !xrc_tgt ? a->srq->handle :
			    DROCE_PROTO_NO_HANDLE;
	req.create_qp.xrcd = xrc_tgt ? verbs_container_of(a->xrcd, struct verbs_dxrcd, xrcd)->handle :
			     DROCE_PROTO_NO_HANDLE;
	req.create_qp.qp_type = (uint8_t)a->qp_type;
	req.create_qp.sq_sig_all = a->sq_sig_all != 0;
	req.create_qp.init_port = init_port;
	if (!xrc_tgt) {
		req.create_qp.cap.max_send_wr = a->cap.max_send_wr;
		req.create_qp.cap.max_send_sge = a->cap.max_send_sge;
		req.create_qp.cap.max_inline_data = a->cap.max_inline_data;
	}
	if (own_rq) {
		req.create_qp.cap.max_recv_wr = a->cap.max_recv_wr;
		req.create_qp.cap.max_recv_sge = a->cap.max_recv_sge;
	}
	ret = verbs_request_fds(c, &req, &resp, &wake_fd, 1, &nfds);
	if (ret == 0 && nfds == 1)
		qp_wake_fd_keep(c, resp.qp.engine_id, wake_fd);
	if (ret == 0 && (qp_resp_check(c, &resp, !own_rq) != 0 ||
			 !send_ops_supported(a, resp.qp.supported_wr))) {
		struct droce_proto_req d = { .op = DROCE_PROTO_OP_DESTROY_QP };
		struct droce_proto_resp dr;

		ret = qp_resp_check(c, &resp, !own_rq) != 0 ? EPROTO : EOPNOTSUPP;
		d.obj.handle = resp.qp.handle;
		verbs_request(c, &d, NULL, 0, &dr);
	}
	if (ret != 0) {
		free(qp);
		return verbs_err_null(ret);
	}
	qp->cap = resp.qp.cap;
	if (!own_rq) {
		qp->cap.max_recv_wr = 0;
		qp->cap.max_recv_sge = 0;
	}
	qp->view.ctl = (struct droce_shm_qp *)(c->region + resp.qp.ctl_off);
	qp->view.sq = c->region + resp.qp.sq_off;
	qp->view.rq = own_rq ? c->region + resp.qp.rq_off : NULL;
	qp->view.sq_size = resp.qp.sq_size;
	qp->view.sq_stride = resp.qp.sq_stride;
	qp->view.sq_max_sge = qp->cap.max_send_sge;
	qp->view.max_inline = qp->cap.max_inline_data;
	qp->view.rq_size = own_rq ? resp.qp.rq_size : 0;
	qp->view.rq_stride = resp.qp.rq_stride;
	qp->view.rq_max_sge = qp->cap.max_recv_sge;
	qp->view.qp_num = resp.qp.qp_num;
	qp->view.qp_type = (uint8_t)a->qp_type;
	qp->view.supported_wr = resp.qp.supported_wr;
	qp->view.db.block = (struct droce_shm_doorbell *)
		(c->region + ((const struct droce_shm_region_hdr *)(void *)c->region)->
		 doorbell_off[resp.qp.engine_id]);
	qp->view.db.slot = resp.qp.db_slot;
	qp->view.db.wake_fd = __atomic_load_n(&c->wake_fd[resp.qp.engine_id], __ATOMIC_ACQUIRE);
	qp->view.lkey_check = verbs_lkey_check;
	qp->view.ah_check = verbs_ah_check;
	qp->view.check_arg = c;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && verbs_qp_batch_init(qp) != 0) {
		struct droce_proto_req d = { .op = DROCE_PROTO_OP_DESTROY_QP };
		struct droce_proto_resp dr;

		d.obj.handle = resp.qp.handle;
		verbs_request(c, &d, NULL, 0, &dr);
		free(qp->batch);
		free(qp->batch_sge);
		free(qp->batch_inline);
		free(qp);
		return verbs_err_null(ENOMEM);
	}
	qp->has_send_ops = (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	ib = &qp->qpx.qp_base;
	ib->context = context;
	ib->qp_context = a->qp_context;
	ib->pd = xrc_tgt ? NULL : a->pd;
	ib->send_cq = xrc_tgt ? NULL : a->send_cq;
	ib->recv_cq = xrc_ini || xrc_tgt ? NULL : a->recv_cq;
	ib->srq = xrc_ini || xrc_tgt ? NULL : a->srq;
	ib->handle = resp.qp.handle;
	ib->qp_num = resp.qp.qp_num;
	ib->state = init_port != 0 ? IBV_QPS_INIT : IBV_QPS_RESET;
	ib->qp_type = a->qp_type;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	/* ibv_create_qp(3): the attributes are updated with what the QP really has. */
	a->cap.max_send_wr = qp->cap.max_send_wr;
	a->cap.max_recv_wr = qp->cap.max_recv_wr;
	a->cap.max_send_sge = qp->cap.max_send_sge;
	a->cap.max_recv_sge = qp->cap.max_recv_sge;
	a->cap.max_inline_data = qp->cap.max_inline_data;
	qp_list_add(c, qp);
	return ib;
}

struct ibv_qp *
verbs_qp_create_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	return qp_create(context, a, 0);
}

/*
 * droce's librdmacm only (droce_verbs.h): ibv_create_qp_ex, then ibv_modify_qp to INIT
 * on port port_num with P_Key index 0 and no access flags, in one request.
 */
VERBS_EXPORT struct ibv_qp *
droce_create_qp_init(struct ibv_context *context, struct ibv_qp_init_attr_ex *a,
		     uint8_t port_num)
{
	if (port_num == 0)
		return verbs_err_null(EINVAL);
	return qp_create(context, a, port_num);
}

VERBS_EXPORT struct ibv_qp *
ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex x;
	struct ibv_qp *qp;

	if (pd == NULL || attr == NULL)
		return verbs_err_null(EINVAL);
	memset(&x, 0, sizeof(x));
	x.qp_context = attr->qp_context;
	x.send_cq = attr->send_cq;
	x.recv_cq = attr->recv_cq;
	x.srq = attr->srq;
	x.cap = attr->cap;
	x.qp_type = attr->qp_type;
	x.sq_sig_all = attr->sq_sig_all;
	x.comp_mask = IBV_QP_INIT_ATTR_PD;
	x.pd = pd;
	qp = verbs_qp_create_ex(pd->context, &x);
	if (qp != NULL)
		attr->cap = x.cap;
	return qp;
}

/* ibv_qp_to_qp_ex(3): NULL unless the QP was created with the wr_* API. */
VERBS_EXPORT struct ibv_qp_ex *
ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	if (qp == NULL || !to_dqp(qp)->has_send_ops)
		return verbs_err_null(EOPNOTSUPP);
	return &to_dqp(qp)->qpx;
}

/* Waits, as rdma-core does, until every async event handed out for the QP is acked. */
VERBS_EXPORT int
ibv_destroy_qp(struct ibv_qp *ib)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_DESTROY_QP };
	struct droce_proto_resp resp;
	struct verbs_dctx *c;
	struct verbs_dqp *qp;
	int ret;

	if (ib == NULL)
		return verbs_err(EINVAL);
	qp = to_dqp(ib);
	c = to_dctx(ib->context);
	req.obj.handle = ib->handle;
	/*
	 * Off the list first: once droced has let it go, its CQs may be destroyed, and a flush
	 * after droced's death (verbs_fatal.c) must not reach them through this QP.
	 */
	qp_list_del(c, qp);
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret != 0) {
		qp_list_add(c, qp);
		return verbs_err(ret);
	}
	pthread_mutex_lock(&ib->mutex);
	while (ib->events_completed != qp->async_reported)
		pthread_cond_wait(&ib->cond, &ib->mutex);
	pthread_mutex_unlock(&ib->mutex);
	qp_free(qp);
	return 0;
}

/* ---- Modify / query ---- */

static void
ah_attr_to_shm(const struct ibv_ah_attr *a, struct droce_shm_ah_attr *s)
{
	memcpy(s->dgid, a->grh.dgid.raw, sizeof(s->dgid));
	/* The GRH field has 20 bits; the kernel and NICs drop the others (UCX passes ~0). */
	s->flow_label = a->grh.flow_label & DROCE_SHM_FLOW_LABEL_MAX;
	s->sgid_index = a->grh.sgid_index;
	s->hop_limit = a->grh.hop_limit;
	s->traffic_class = a->grh.traffic_class;
	s->is_global = a->is_global;
	s->sl = a->sl;
	s->port_num = a->port_num;
}

static void
ah_attr_from_shm(const struct droce_shm_ah_attr *s, struct ibv_ah_attr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a->grh.dgid.raw, s->dgid, sizeof(s->dgid));
	a->grh.flow_label = s->flow_label;
	a->grh.sgid_index = s->sgid_index;
	a->grh.hop_limit = s->hop_limit;
	a->grh.traffic_class = s->traffic_class;
	a->is_global = s->is_global;
	a->sl = s->sl;
	a->port_num = s->port_num != 0 ? s->port_num : VERBS_PORT_NUM;
}

/*
 * ibv_qp_attr -> droce_shm_qp_attr. Enumerations are range-checked first (the struct
 * holds them in bytes); the rest is checked by droce_shm_qp_attr_check, here against the
 * state this side knows and again by droced against the engine's.
 */
static int
qp_attr_to_shm(const struct ibv_qp_attr *a, int mask, struct droce_shm_qp_attr *s)
{
	if ((uint32_t)mask & ~(uint32_t)QP_ATTR_MASKS)
		return EINVAL;
	if ((mask & IBV_QP_STATE) && (uint32_t)a->qp_state > IBV_QPS_ERR)
		return EINVAL;
	if ((mask & IBV_QP_CUR_STATE) && (uint32_t)a->cur_qp_state > IBV_QPS_ERR)
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    ((uint32_t)a->path_mtu < IBV_MTU_256 || (uint32_t)a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	/*
	 * RoCE addresses by GRH only: an AV without one cannot reach anything. Programs
	 * written for InfiniBand (ibv_rc_pingpong without -g) pass a LID instead; say how
	 * to fix it, since EINVAL alone does not.
	 */
	if ((mask & IBV_QP_AV) && !a->ah_attr.is_global) {
		verbs_warn("modify_qp: the address has no GRH (ah_attr.is_global = 0), which "
			   "RoCE needs: pass a GID index (ibv_*_pingpong -g 0, perftest -x 0)");
		return EINVAL;
	}
	memset(s, 0, sizeof(*s));
	s->mask = (uint32_t)mask;
	s->qkey = a->qkey;
	s->rq_psn = a->rq_psn;
	s->sq_psn = a->sq_psn;
	s->dest_qp_num = a->dest_qp_num;
	s->qp_access_flags = (uint32_t)a->qp_access_flags;
	s->pkey_index = a->pkey_index;
	s->qp_state = (uint8_t)a->qp_state;
	s->cur_qp_state = (uint8_t)a->cur_qp_state;
	s->path_mtu = (uint8_t)a->path_mtu;
	s->en_sqd_async_notify = a->en_sqd_async_notify;
	s->max_rd_atomic = a->max_rd_atomic;
	s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	s->min_rnr_timer = a->min_rnr_timer;
	s->port_num = a->port_num;
	s->timeout = a->timeout;
	s->retry_cnt = a->retry_cnt;
	s->rnr_retry = a->rnr_retry;
	ah_attr_to_shm(&a->ah_attr, &s->ah);
	return 0;
}

VERBS_EXPORT int
ibv_modify_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int attr_mask)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_MODIFY_QP };
	struct droce_proto_resp resp;
	struct droce_shm_qp_limits lim;
	struct verbs_dctx *c;
	struct verbs_dqp *qp;
	int ret;

	if (ib == NULL || attr == NULL)
		return verbs_err(EINVAL);
	qp = to_dqp(ib);
	c = to_dctx(ib->context);
	ret = qp_attr_to_shm(attr, attr_mask, &req.modify_qp.attr);
	if (ret != 0)
		return verbs_err(ret);
	lim.max_rd_atomic = c->limits.max_qp_init_rd_atom > UINT8_MAX ? UINT8_MAX :
			    (uint8_t)c->limits.max_qp_init_rd_atom;
	lim.max_dest_rd_atomic = c->limits.max_qp_rd_atom > UINT8_MAX ? UINT8_MAX :
				 (uint8_t)c->limits.max_qp_rd_atom;
	lim.phys_port_cnt = 1;
	lim.pkey_tbl_len = 1;
	lim.gid_tbl_len = (uint16_t)c->nb_gids;
	if (droce_shm_qp_attr_check(qp->view.qp_type, droce_shm_client_qp_state(&qp->view),
				    &req.modify_qp.attr, &lim) != 0)
		return verbs_err(EINVAL);
	req.modify_qp.handle = ib->handle;
	ret = verbs_request(c, &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	if (attr_mask & IBV_QP_STATE)
		ib->state = attr->qp_state;
	/* RESET: the engine wrote the QP's last completions already; none may come out now */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		/* XRC: an initiator has no receive CQ, a target no CQ at all. */
		if (ib->send_cq != NULL)
			verbs_cq_clean(ib->send_cq, ib->qp_num);
		if (ib->recv_cq != NULL && ib->recv_cq != ib->send_cq)
			verbs_cq_clean(ib->recv_cq, ib->qp_num);
	}
	return 0;
}

VERBS_EXPORT int
ibv_query_qp(struct ibv_qp *ib, struct ibv_qp_attr *attr, int attr_mask,
	     struct ibv_qp_init_attr *init_attr)
{
	struct droce_proto_req req = { .op = DROCE_PROTO_OP_QUERY_QP };
	struct droce_proto_resp resp;
	const struct droce_shm_qp_attr *s;
	struct ibv_qp_cap cap;
	int ret;

	(void)attr_mask;	/* everything is returned, as rdma-core's providers do */
	if (ib == NULL || attr == NULL || init_attr == NULL)
		return verbs_err(EINVAL);
	req.obj.handle = ib->handle;
	ret = verbs_request(to_dctx(ib->context), &req, NULL, 0, &resp);
	if (ret != 0)
		return verbs_err(ret);
	s = &resp.query_qp.attr;
	cap.max_send_wr = resp.query_qp.cap.max_send_wr;
	cap.max_recv_wr = resp.query_qp.cap.max_recv_wr;
	cap.max_send_sge = resp.query_qp.cap.max_send_sge;
	cap.max_recv_sge = resp.query_qp.cap.max_recv_sge;
	cap.max_inline_data = resp.query_qp.cap.max_inline_data;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum ibv_qp_state)s->qp_state;
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = (enum ibv_mtu)s->path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qkey = s->qkey;
	attr->rq_psn = s->rq_psn;
	attr->sq_psn = s->sq_psn;
	attr->dest_qp_num = s->dest_qp_num;
	attr->qp_access_flags = (unsigned int)s->qp_access_flags;
	attr->cap = cap;
	ah_attr_from_shm(&s->ah, &attr->ah_attr);
	attr->pkey_index = s->pkey_index;
	attr->en_sqd_async_notify = s->en_sqd_async_notify;
	attr->sq_draining = s->qp_state == IBV_QPS_SQD;
	attr->max_rd_atomic = s->max_rd_atomic;
	attr->max_dest_rd_atomic = s->max_dest_rd_atomic;
	attr->min_rnr_timer = s->min_rnr_timer;
	attr->port_num = VERBS_PORT_NUM;
	attr->timeout = s->timeout;
	attr->retry_cnt = s->retry_cnt;
	attr->rnr_retry = s->rnr_retry;
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ib->qp_context;
	init_attr->send_cq = ib->send_cq;
	init_attr->recv_cq = ib->recv_cq;
	init_attr->srq = ib->srq;
	init_attr->cap = cap;
	init_attr->qp_type = ib->qp_type;
	init_attr->sq_sig_all = resp.query_qp.sq_sig_all;
	ib->state = attr->qp_state;
	return 0;
}

/* ---- Not implemented ---- */

/*
 * ibv_attach_mcast(3), ibv_detach_mcast(3): a UD QP and a multicast GID (droced checks
 * both: EINVAL); droced's engines deliver the group's packets, its port announces the
 * group (IGMP, MLD). The LID means nothing on RoCE.
 */
static int
qp_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid, enum droce_proto_op op)
{
	struct droce_proto_req req = { .op = op };
	struct droce_proto_resp resp;
	int ret;

	if (qp == NULL || gid == NULL)
		return verbs_err(EINVAL);
	req.mcast.qp = qp->handle;
	req.mcast.lid = lid;
	memcpy(req.mcast.gid, gid->raw, sizeof(req.mcast.gid));
	ret = verbs_request(to_dctx(qp->context), &req, NULL, 0, &resp);
	return ret != 0 ? verbs_err(ret) : 0;
}

VERBS_EXPORT int
ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return qp_mcast(qp, gid, lid, DROCE_PROTO_OP_ATTACH_MCAST);
}

VERBS_EXPORT int
ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return qp_mcast(qp, gid, lid, DROCE_PROTO_OP_DETACH_MCAST);
}

/* ibv_query_qp_data_in_order(3): 0 means "not guaranteed", the answer for a software HCA. */
VERBS_EXPORT int
ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	(void)qp; (void)op; (void)flags;
	return 0;
}

/* Enhanced connection establishment: no ECE options to negotiate. */
VERBS_EXPORT int
ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return verbs_err(EOPNOTSUPP);
}

VERBS_EXPORT int
ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	(void)qp; (void)ece;
	return verbs_err(EOPNOTSUPP);
}
