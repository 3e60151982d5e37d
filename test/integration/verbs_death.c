/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_death: what a program sees when the droced it is attached to dies. It sets up
 * outstanding work (RC sends to a QP that does not exist, so they wait on retries, and
 * posted receives), a CQ on a completion channel with a thread blocked in
 * ibv_get_cq_event, and the main thread blocked in poll() on async_fd, then prints
 * "ready" and waits for someone to kill droced. Then, as a NIC's provider does after a
 * catastrophic error (IB 11.6.2):
 *   - async_fd turns readable and ibv_get_async_event returns IBV_EVENT_DEVICE_FATAL;
 *     the next call returns EIO at once (blocking fd) instead of waiting forever;
 *   - the blocked ibv_get_cq_event returns, and every posted send and receive completes
 *     with IBV_WC_WR_FLUSH_ERR, each wr_id exactly once; then ibv_get_cq_event says EIO;
 *     one blocked on a channel with no CQ at all returns EIO;
 *   - posting fails with EIO, control verbs with EIO, destroy verbs and
 *     ibv_close_device succeed.
 * It prints "fatal_at=T" (CLOCK_MONOTONIC seconds when the event arrived, comparable with
 * the killer's clock) and "verbs_death: OK".
 *
 *   verbs_death [-s SENDS] [-r RECVS]
 *
 * Exit status: 0 all as above; 1 setup or usage error; 2 a check failed; 3 a wait that
 * must end did not end within the time allowed (a hang).
 */

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

#define EXIT_SETUP	1
#define EXIT_CHECK	2
#define EXIT_HANG	3

#define MSG_SIZE	256
#define MAX_WR		64
/* After the event, everything else must follow promptly: a call that waits this long is
 * a hang. */
#define AFTER_FATAL_S	5
/* A QPN nobody has: the sends wait on their retries (timeout 20: 4.3 s each, 7 of them). */
#define NO_SUCH_QPN	0xFFFF00u
#define QP_TIMEOUT	20
#define WR_RECV_BASE	1000

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_comp_channel *chan, *empty_chan;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static char buf[MSG_SIZE * MAX_WR];
static int nsends = 16, nrecvs = 8;

/* Written by the channel thread. */
static int chan_rc = -1, chan_errno;
static int empty_rc, empty_errno;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
setup(void)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = MAX_WR, .max_recv_wr = MAX_WR, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.sq_sig_all = 0,
	};

	ctx = vt_open_first();
	pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	chan = mr ? ibv_create_comp_channel(ctx) : NULL;
	cq = chan ? ibv_create_cq(ctx, 2 * MAX_WR, NULL, chan, 0) : NULL;
	if (cq == NULL || ibv_req_notify_cq(cq, 0) != 0)
		vt_die(EXIT_SETUP, "pd/mr/channel/cq: %s", strerror(errno));
	ia.send_cq = ia.recv_cq = cq;
	qp = ibv_create_qp(pd, &ia);
	if (qp == NULL)
		vt_die(EXIT_SETUP, "ibv_create_qp: %s", strerror(errno));
	vt_qp_init(qp, 0);
	vt_qp_connect(qp, NO_SUCH_QPN, QP_TIMEOUT);
}

static int
post_recv(uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + (wr_id % MAX_WR) * MSG_SIZE, .length = MSG_SIZE,
		.lkey = mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Unsignaled but for the last: a flush completes every one of them anyway. */
static int
post_send(uint64_t wr_id, bool signaled)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf + (wr_id % MAX_WR) * MSG_SIZE, .length = MSG_SIZE,
		.lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;

	return ibv_post_send(qp, &wr, &bad);
}

static void *
channel_thread(void *arg)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	(void)arg;
	chan_rc = ibv_get_cq_event(chan, &ev_cq, &ev_ctx);
	chan_errno = errno;
	if (chan_rc == 0) {
		if (ev_cq != cq)
			chan_rc = -2;
		ibv_ack_cq_events(ev_cq, 1);
	}
	return NULL;
}

/* Blocks on a channel that has no CQ: only droced's death can end it (EIO). */
static void *
empty_channel_thread(void *arg)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	(void)arg;
	empty_rc = ibv_get_cq_event(empty_chan, &ev_cq, &ev_ctx);
	empty_errno = errno;
	return NULL;
}

static void
check_flushes(void)
{
	struct ibv_wc wc[MAX_WR];
	bool seen_send[MAX_WR] = { false }, seen_recv[MAX_WR] = { false };
	int got = 0, n, i;

	while ((n = ibv_poll_cq(cq, MAX_WR, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint64_t id = wc[i].wr_id;
			bool *seen;

			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				vt_die(EXIT_CHECK, "wr_id %" PRIu64 ": status %s, want flush error",
				    id, ibv_wc_status_str(wc[i].status));
			if (wc[i].qp_num != qp->qp_num)
				vt_die(EXIT_CHECK, "wr_id %" PRIu64 ": qp_num %u", id, wc[i].qp_num);
			if (id >= WR_RECV_BASE) {
				seen = &seen_recv[id - WR_RECV_BASE];
				if (id - WR_RECV_BASE >= (uint64_t)nrecvs ||
				    wc[i].opcode != IBV_WC_RECV)
					vt_die(EXIT_CHECK, "unexpected receive flush %" PRIu64, id);
			} else {
				seen = &seen_send[id];
				if (id >= (uint64_t)nsends)
					vt_die(EXIT_CHECK, "unexpected send flush %" PRIu64, id);
			}
			if (*seen)
				vt_die(EXIT_CHECK, "wr_id %" PRIu64 " completed twice", id);
			*seen = true;
			got++;
		}
	}
	if (n < 0)
		vt_die(EXIT_CHECK, "ibv_poll_cq: %d", n);
	if (got != nsends + nrecvs)
		vt_die(EXIT_CHECK, "%d flush completions, want %d sends + %d receives", got,
		    nsends, nrecvs);
	printf("flushed %d sends and %d receives\n", nsends, nrecvs);
}

int
main(int argc, char **argv)
{
	struct pollfd pfd;
	struct ibv_async_event ev;
	pthread_t th, th_empty;
	double fatal_at;
	int opt, i, ret;

	while ((opt = getopt(argc, argv, "s:r:")) != -1) {
		switch (opt) {
		case 's':
			nsends = atoi(optarg);
			break;
		case 'r':
			nrecvs = atoi(optarg);
			break;
		default:
			vt_die(EXIT_SETUP, "usage: verbs_death [-s SENDS] [-r RECVS]");
		}
	}
	if (nsends < 1 || nsends > MAX_WR || nrecvs < 0 || nrecvs > MAX_WR)
		vt_die(EXIT_SETUP, "1..%d sends, 0..%d receives", MAX_WR, MAX_WR);
	vt_init("verbs_death");
	setup();
	for (i = 0; i < nrecvs; i++)
		if (post_recv(WR_RECV_BASE + (uint64_t)i) != 0)
			vt_die(EXIT_SETUP, "ibv_post_recv: %s", strerror(errno));
	for (i = 0; i < nsends; i++)
		if (post_send((uint64_t)i, i == nsends - 1) != 0)
			vt_die(EXIT_SETUP, "ibv_post_send: %s", strerror(errno));
	empty_chan = ibv_create_comp_channel(ctx);
	if (empty_chan == NULL)
		vt_die(EXIT_SETUP, "ibv_create_comp_channel: %s", strerror(errno));
	if (pthread_create(&th, NULL, channel_thread, NULL) != 0 ||
	    pthread_create(&th_empty, NULL, empty_channel_thread, NULL) != 0)
		vt_die(EXIT_SETUP, "pthread_create");
	printf("ready qpn=%u\n", qp->qp_num);
	fflush(stdout);

	/* Until droced dies: the harness has its own deadline for that. */
	pfd.fd = ctx->async_fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, -1) != 1)
		vt_die(EXIT_SETUP, "poll: %s", strerror(errno));
	fatal_at = now();
	vt_watch(AFTER_FATAL_S, EXIT_HANG);
	if (ibv_get_async_event(ctx, &ev) != 0)
		vt_die(EXIT_CHECK, "ibv_get_async_event: %s", strerror(errno));
	if (ev.event_type != IBV_EVENT_DEVICE_FATAL)
		vt_die(EXIT_CHECK, "event %s, want device fatal", ibv_event_type_str(ev.event_type));
	ibv_ack_async_event(&ev);
	printf("fatal_at=%.6f\n", fatal_at);
	/* Nothing more will come: EIO now, not a wait. */
	if (ibv_get_async_event(ctx, &ev) == 0 || errno != EIO)
		vt_die(EXIT_CHECK, "second ibv_get_async_event: %s, want EIO",
		    ibv_get_async_event(ctx, &ev) == 0 ? "an event" : strerror(errno));
	pthread_join(th, NULL);
	pthread_join(th_empty, NULL);
	if (empty_rc != -1 || empty_errno != EIO)
		vt_die(EXIT_CHECK, "ibv_get_cq_event on a channel without CQs: rc %d (%s), want EIO",
		       empty_rc, strerror(empty_errno));
	if (chan_rc != 0)
		vt_die(EXIT_CHECK, "ibv_get_cq_event: rc %d (%s), want the CQ's event", chan_rc,
		    strerror(chan_errno));
	check_flushes();
	{
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_get_cq_event(chan, &ev_cq, &ev_ctx) == 0 || errno != EIO)
			vt_die(EXIT_CHECK, "ibv_get_cq_event after the flushes: want EIO");
	}
	ret = post_send(0, true);
	if (ret != EIO)
		vt_die(EXIT_CHECK, "ibv_post_send after death: %d, want EIO", ret);
	ret = post_recv(WR_RECV_BASE);
	if (ret != EIO)
		vt_die(EXIT_CHECK, "ibv_post_recv after death: %d, want EIO", ret);
	if (ibv_create_cq(ctx, 4, NULL, NULL, 0) != NULL || errno != EIO)
		vt_die(EXIT_CHECK, "ibv_create_cq after death: want EIO, got %s", strerror(errno));
	{
		struct ibv_qp_attr qa;
		struct ibv_qp_init_attr qia;

		errno = 0;
		ret = ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
		if (ret != EIO)
			vt_die(EXIT_CHECK, "ibv_query_qp after death: %d, want EIO", ret);
	}
	if (ibv_destroy_qp(qp) != 0 || ibv_destroy_cq(cq) != 0 ||
	    ibv_destroy_comp_channel(chan) != 0 || ibv_destroy_comp_channel(empty_chan) != 0 || ibv_dereg_mr(mr) != 0 ||
	    ibv_dealloc_pd(pd) != 0 || ibv_close_device(ctx) != 0)
		vt_die(EXIT_CHECK, "destroying after death: %s", strerror(errno));
	vt_unwatch();
	printf("verbs_death: OK\n");
	return 0;
}
