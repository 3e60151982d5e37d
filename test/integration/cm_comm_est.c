/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * The passive end of an rdma_cm connection whose RTU never comes: what a server does when
 * the first packet on its QP beats the RTU (IB 12.9.8.4; Linux cm_establish, which kernel
 * consumers such as SRP's target reach through ib_cm_notify). The server owns its QP, as
 * those do: created with ibv_create_qp, not rdma_create_qp (rdma_accept would move that
 * one to RTS at once, as rdma-core's does), moved to INIT and RTR with rdma_init_qp_attr,
 * and to RTS only once the connection is established. It listens, accepts one RC
 * connection with a receive posted, then waits on the QP's asynchronous events, the CM
 * channel and the CQ at once:
 *
 *   IBV_EVENT_COMM_EST for its QP  ->  rdma_notify(id, IBV_EVENT_COMM_EST)
 *   RDMA_CM_EVENT_ESTABLISHED      (which the notify must bring, there being no RTU)
 *                                  ->  the QP to RTS
 *   the receive's completion       (its bytes printed)
 *   RDMA_CM_EVENT_DISCONNECTED     (the peer's DREQ): the end
 *
 * Everything through rdma-core's API and constants, nothing of droce's: the program runs
 * on droce's librdmacm.so.1 and libibverbs.so.1 as any rdma_cm server would. One line per
 * step on stdout ("listening", "accepted qpn N", "comm_est qpn N", "notify 0",
 * "established", "recv N bytes: TEXT", "disconnected"); before the notify, it also checks
 * that rdma_notify refuses anything but COMM_EST (EINVAL) and that no ESTABLISHED came.
 * Exit 0 when all of it happened in that order, 1 otherwise (the reason on stderr).
 *
 *     cm_comm_est IPV4 PORT [TIMEOUT_S]
 */

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BUF_LEN		256
#define POLL_MS		10

static void
die(const char *what, int err)
{
	fprintf(stderr, "cm_comm_est: %s: %s\n", what, err ? strerror(err) : "failed");
	exit(1);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The next CM event of ch within timeout_s, acked; its type and status. */
static enum rdma_cm_event_type
next_cm_event(struct rdma_event_channel *ch, double timeout_s, struct rdma_cm_id **id,
	      int *status)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type type;

	if (poll(&p, 1, (int)(timeout_s * 1000)) != 1)
		die("no rdma_cm event", ETIMEDOUT);
	if (rdma_get_cm_event(ch, &ev) != 0)
		die("rdma_get_cm_event", errno);
	type = ev->event;
	*id = ev->id;
	*status = ev->status;
	rdma_ack_cm_event(ev);
	return type;
}

int
main(int argc, char **argv)
{
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen_id, *id;
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct sockaddr_in sin;
	struct ibv_recv_wr rwr, *bad_rwr;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[BUF_LEN + 1];
	bool comm_est = false, established = false, received = false;
	double timeout_s = argc > 3 ? atof(argv[3]) : 20.0, deadline;
	struct ibv_qp_attr attr;
	struct ibv_qp *qp;
	int status, mask;

	if (argc < 3) {
		fprintf(stderr, "usage: cm_comm_est IPV4 PORT [TIMEOUT_S]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1)
		die("not an IPv4 address", EINVAL);

	ch = rdma_create_event_channel();
	if (ch == NULL)
		die("rdma_create_event_channel", errno);
	if (rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) != 0)
		die("rdma_create_id", errno);
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin) != 0)
		die("rdma_bind_addr", errno);
	if (rdma_listen(listen_id, 1) != 0)
		die("rdma_listen", errno);
	printf("listening\n");

	if (next_cm_event(ch, timeout_s, &id, &status) != RDMA_CM_EVENT_CONNECT_REQUEST)
		die("expected RDMA_CM_EVENT_CONNECT_REQUEST", 0);
	pd = ibv_alloc_pd(id->verbs);
	cq = pd != NULL ? ibv_create_cq(id->verbs, 4, NULL, NULL, 0) : NULL;
	if (cq == NULL)
		die("ibv_alloc_pd/ibv_create_cq", errno);
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = cq;
	qa.cap.max_send_wr = qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	if (qp == NULL)
		die("ibv_create_qp", errno);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	if (rdma_init_qp_attr(id, &attr, &mask) != 0 || ibv_modify_qp(qp, &attr, mask) != 0)
		die("QP to INIT", errno);
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(id, &attr, &mask) != 0 || ibv_modify_qp(qp, &attr, mask) != 0)
		die("QP to RTR", errno);
	memset(buf, 0, sizeof(buf));
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL)
		die("ibv_reg_mr", errno);
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = BUF_LEN, .lkey = mr->lkey };
	rwr = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	if (ibv_post_recv(qp, &rwr, &bad_rwr) != 0)
		die("ibv_post_recv", errno);
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = cp.initiator_depth = 1;
	cp.rnr_retry_count = 7;
	cp.qp_num = qp->qp_num;
	if (rdma_accept(id, &cp) != 0)
		die("rdma_accept", errno);
	printf("accepted qpn %u\n", qp->qp_num);

	/* One loop over the async fd, the channel and the CQ, none of them blocking long. */
	deadline = now_s() + timeout_s;
	while (!(comm_est && established && received)) {
		struct pollfd p[2] = {
			{ .fd = id->verbs->async_fd, .events = POLLIN },
			{ .fd = ch->fd, .events = POLLIN },
		};
		struct ibv_wc wc;
		int n;

		if (now_s() > deadline)
			die(!comm_est ? "no IBV_EVENT_COMM_EST" : !established ?
			    "no RDMA_CM_EVENT_ESTABLISHED after rdma_notify" :
			    "the receive did not complete", ETIMEDOUT);
		n = ibv_poll_cq(cq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq", EIO);
		if (n == 1) {
			if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.wr_id != 1)
				die("the receive's completion is not a successful RECV", EIO);
			buf[wc.byte_len < BUF_LEN ? wc.byte_len : BUF_LEN] = '\0';
			printf("recv %u bytes: %s\n", wc.byte_len, buf);
			received = true;
		}
		if (poll(p, 2, POLL_MS) <= 0)
			continue;
		if (p[0].revents & POLLIN) {
			struct ibv_async_event ae;

			if (ibv_get_async_event(id->verbs, &ae) != 0)
				die("ibv_get_async_event", errno);
			if (ae.event_type == IBV_EVENT_COMM_EST && ae.element.qp == qp &&
			    !comm_est) {
				printf("comm_est qpn %u\n", ae.element.qp->qp_num);
				comm_est = true;
				if (established)
					die("RDMA_CM_EVENT_ESTABLISHED before rdma_notify (was an RTU "
					    "sent?)", 0);
				/* Linux's ib_cm_notify takes COMM_EST and PATH_MIG only. */
				if (rdma_notify(id, IBV_EVENT_SQ_DRAINED) == 0 || errno != EINVAL)
					die("rdma_notify(IBV_EVENT_SQ_DRAINED) was not refused with "
					    "EINVAL", errno);
				printf("notify %d\n", rdma_notify(id, IBV_EVENT_COMM_EST));
			} else {
				fprintf(stderr, "cm_comm_est: async event %s\n",
					ibv_event_type_str(ae.event_type));
			}
			ibv_ack_async_event(&ae);
		}
		if (p[1].revents & POLLIN) {
			struct rdma_cm_id *eid;
			enum rdma_cm_event_type t = next_cm_event(ch, 0, &eid, &status);

			if (t != RDMA_CM_EVENT_ESTABLISHED || eid != id)
				die(rdma_event_str(t), status < 0 ? -status : 0);
			if (!comm_est)
				die("RDMA_CM_EVENT_ESTABLISHED before IBV_EVENT_COMM_EST (was an RTU "
				    "sent?)", 0);
			printf("established\n");
			established = true;
			memset(&attr, 0, sizeof(attr));
			attr.qp_state = IBV_QPS_RTS;
			if (rdma_init_qp_attr(id, &attr, &mask) != 0 ||
			    ibv_modify_qp(qp, &attr, mask) != 0)
				die("QP to RTS", errno);
		}
	}

	/* The peer ends it with a DREQ. */
	if (next_cm_event(ch, timeout_s, &id, &status) != RDMA_CM_EVENT_DISCONNECTED)
		die("expected RDMA_CM_EVENT_DISCONNECTED", 0);
	printf("disconnected\n");
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	return 0;
}
