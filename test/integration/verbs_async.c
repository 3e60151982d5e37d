/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * verbs_async: the asynchronous-event contract on one device. A readable async_fd means
 * ibv_get_async_event returns at once (ibv_get_async_event(3), as the kernel's uverbs
 * event file behaves); with O_NONBLOCK set an empty queue is EAGAIN, never a wait.
 *
 *   verbs_async [--nonblock] CASE
 *
 * CASE is one of
 *   srq_limit  an RC pair in loopback whose receiver uses an SRQ (max_wr 32, 10 receives
 *              posted, srq_limit armed at 5): 6 SENDs -> IBV_EVENT_SRQ_LIMIT_REACHED
 *   last_wqe   a QP on an SRQ moved to the error state -> IBV_EVENT_QP_LAST_WQE_REACHED
 *   cq_err     a CQ overrun (11.4.2.1) -> IBV_EVENT_CQ_ERR on the CQ and
 *              IBV_EVENT_QP_FATAL on each QP that completes into it
 *   forget     srq_limit's event left unread, its SRQ destroyed: async_fd not readable
 *   eintr      a signal ends a blocked ibv_get_async_event with EINTR
 * Every event is awaited with poll() on async_fd first; ibv_get_async_event then runs
 * under a watchdog. Exit status: 0 every expected event seen with the right object;
 * 1 setup or usage error; 2 wrong or missing event; 3 ibv_get_async_event blocked after
 * poll() said readable (the watchdog fired); 4 the fd stayed readable with nothing left
 * (non-blocking mode: EAGAIN was right, but poll() kept saying readable).
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs_test_util.h"

#define EXIT_SETUP	1
#define EXIT_EVENT	2
#define EXIT_BLOCKED	3
#define EXIT_STALE_FD	4

/* How long poll() may wait for an event the engine owes us, and how long
 * ibv_get_async_event may take once poll() said readable. */
#define EVENT_WAIT_MS	5000
#define GET_WATCHDOG_S	3

/* Local ACK timeout code 14: 67 ms. */
#define QP_TIMEOUT	14
#define MSG_SIZE	64
#define SRQ_MAX_WR	32
#define SRQ_POSTED	10
#define SRQ_LIMIT	5

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static char buf[MSG_SIZE * 64];
static bool nonblock;

static void
open_device(void)
{
	int flags;

	ctx = vt_open_first();
	pd = ibv_alloc_pd(ctx);
	mr = pd != NULL ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	if (mr == NULL)
		vt_die(EXIT_SETUP, "pd/mr: %s", strerror(errno));
	if (nonblock) {
		flags = fcntl(ctx->async_fd, F_GETFL);
		if (flags < 0 || fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK) < 0)
			vt_die(EXIT_SETUP, "O_NONBLOCK on async_fd: %s", strerror(errno));
	}
}

static struct ibv_qp *
make_qp(struct ibv_cq *cq, struct ibv_srq *srq, uint32_t send_wr)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = send_wr, .max_recv_wr = srq ? 0 : 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (qp == NULL)
		vt_die(EXIT_SETUP, "ibv_create_qp: %s", strerror(errno));
	vt_qp_init(qp, IBV_ACCESS_REMOTE_WRITE);
	return qp;
}

/* Connects qp to the QP numbered dqpn of this device (loopback). */
static void
connect_qp(struct ibv_qp *qp, uint32_t dqpn)
{
	vt_qp_connect(qp, dqpn, QP_TIMEOUT);
}

static void
post_sends(struct ibv_qp *qp, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int i;

	for (i = 0; i < n; i++) {
		wr.wr_id = (uint64_t)i;
		if (ibv_post_send(qp, &wr, &bad) != 0)
			vt_die(EXIT_SETUP, "ibv_post_send %d: %s", i, strerror(errno));
	}
}

/* Waits until async_fd is readable (EXIT_EVENT if it never is), then takes one event
 * under the watchdog. */
static void
next_event(struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int n;

	n = poll(&pfd, 1, EVENT_WAIT_MS);
	if (n < 0)
		vt_die(EXIT_SETUP, "poll: %s", strerror(errno));
	if (n == 0)
		vt_die(EXIT_EVENT, "no event within %d ms", EVENT_WAIT_MS);
	vt_watch(GET_WATCHDOG_S, EXIT_BLOCKED);
	if (ibv_get_async_event(ctx, ev) != 0)
		vt_die(EXIT_EVENT, "poll() said readable, ibv_get_async_event: %s",
		    strerror(errno));
	vt_unwatch();
	printf("event %s\n", ibv_event_type_str(ev->event_type));
}

/* After the last expected event: nothing more is queued, and the fd says so. */
static void
expect_no_more(void)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n;

	/* Anything still on its way from the engine arrives well within this. */
	n = poll(&pfd, 1, 200);
	if (n > 0) {
		vt_watch(GET_WATCHDOG_S, EXIT_BLOCKED);
		if (ibv_get_async_event(ctx, &ev) == 0)
			vt_die(EXIT_EVENT, "unexpected extra event %s",
			    ibv_event_type_str(ev.event_type));
		vt_unwatch();
		if (!nonblock || errno != EAGAIN)
			vt_die(EXIT_EVENT, "ibv_get_async_event: %s", strerror(errno));
		if (poll(&pfd, 1, 0) > 0)
			vt_die(EXIT_STALE_FD, "async_fd readable with no event queued");
	}
	if (nonblock) {
		if (ibv_get_async_event(ctx, &ev) == 0 || errno != EAGAIN)
			vt_die(EXIT_EVENT, "empty non-blocking queue: want EAGAIN, got %s",
			    strerror(errno));
	}
}

static void
expect_event(enum ibv_event_type type, void *object)
{
	struct ibv_async_event ev;
	void *got;

	next_event(&ev);
	if (ev.event_type != type)
		vt_die(EXIT_EVENT, "want %s, got %s", ibv_event_type_str(type),
		    ibv_event_type_str(ev.event_type));
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		got = ev.element.cq;
		break;
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		got = ev.element.srq;
		break;
	default:
		got = ev.element.qp;
		break;
	}
	if (got != object)
		vt_die(EXIT_EVENT, "%s names %p, want %p", ibv_event_type_str(type), got, object);
	ibv_ack_async_event(&ev);
}

/*
 * An RC pair in loopback whose receiver uses an SRQ (max_wr 32, 10 receives posted,
 * srq_limit armed at 5), and 6 SENDs: the SRQ drops below its limit.
 */
static struct ibv_srq *
srq_below_limit(struct ibv_cq **cqp, struct ibv_qp **txp, struct ibv_qp **rxp)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SRQ_MAX_WR, .max_sge = 1 } };
	struct ibv_srq_attr lim = { .srq_limit = SRQ_LIMIT };
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = cq != NULL ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_qp *tx, *rx;
	int i;

	if (srq == NULL)
		vt_die(EXIT_SETUP, "cq/srq: %s", strerror(errno));
	for (i = 0; i < SRQ_POSTED; i++)
		if (ibv_post_srq_recv(srq, &rwr, &bad) != 0)
			vt_die(EXIT_SETUP, "ibv_post_srq_recv: %s", strerror(errno));
	if (ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) != 0)
		vt_die(EXIT_SETUP, "arming srq_limit: %s", strerror(errno));
	tx = make_qp(cq, NULL, 16);
	rx = make_qp(cq, srq, 16);
	connect_qp(tx, rx->qp_num);
	connect_qp(rx, tx->qp_num);
	/* 10 - 6 = 4 receives left: below the limit of 5. */
	post_sends(tx, SRQ_POSTED - SRQ_LIMIT + 1);
	*cqp = cq;
	*txp = tx;
	*rxp = rx;
	return srq;
}

static void
case_srq_limit(void)
{
	struct ibv_qp *tx, *rx;
	struct ibv_cq *cq;
	struct ibv_srq *srq = srq_below_limit(&cq, &tx, &rx);

	expect_event(IBV_EVENT_SRQ_LIMIT_REACHED, srq);
	expect_no_more();
}

/*
 * An event nobody read goes with its object: after the SRQ (and its QPs) are destroyed,
 * async_fd is no longer readable and nothing is queued, as the kernel drops a destroyed
 * object's unread events.
 */
static void
case_forget(void)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	struct ibv_qp *tx, *rx;
	struct ibv_cq *cq;
	struct ibv_srq *srq = srq_below_limit(&cq, &tx, &rx);

	if (poll(&pfd, 1, EVENT_WAIT_MS) != 1)
		vt_die(EXIT_EVENT, "no SRQ limit event within %d ms", EVENT_WAIT_MS);
	if (ibv_destroy_qp(tx) != 0 || ibv_destroy_qp(rx) != 0 || ibv_destroy_srq(srq) != 0)
		vt_die(EXIT_SETUP, "destroying: %s", strerror(errno));
	if (poll(&pfd, 1, 0) != 0)
		vt_die(EXIT_STALE_FD, "async_fd readable after its event's SRQ was destroyed");
	if (nonblock && (ibv_get_async_event(ctx, &ev) == 0 || errno != EAGAIN))
		vt_die(EXIT_EVENT, "an event of a destroyed SRQ was handed out");
	(void)cq;
}

static void
on_usr1(int sig)
{
	(void)sig;
}

static void *
interrupter(void *arg)
{
	usleep(200000);
	pthread_kill(*(pthread_t *)arg, SIGUSR1);
	return NULL;
}

/*
 * A signal ends a blocked ibv_get_async_event with EINTR (a handler without SA_RESTART),
 * as the kernel event file's read does; non-blocking, an empty queue is EAGAIN at once.
 */
static void
case_eintr(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	struct ibv_async_event ev;
	pthread_t self = pthread_self(), th;
	int rc;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0 ||
	    pthread_create(&th, NULL, interrupter, &self) != 0)
		vt_die(EXIT_SETUP, "signal set-up: %s", strerror(errno));
	vt_watch(GET_WATCHDOG_S, EXIT_BLOCKED);
	rc = ibv_get_async_event(ctx, &ev);
	vt_unwatch();
	pthread_join(th, NULL);
	if (rc == 0)
		vt_die(EXIT_EVENT, "an event from nowhere: %s", ibv_event_type_str(ev.event_type));
	if (errno != (nonblock ? EAGAIN : EINTR))
		vt_die(EXIT_EVENT, "ibv_get_async_event: %s, want %s", strerror(errno),
		       nonblock ? "EAGAIN" : "EINTR");
}

static void
case_last_wqe(void)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = SRQ_MAX_WR, .max_sge = 1 } };
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_cq *cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	struct ibv_srq *srq = cq != NULL ? ibv_create_srq(pd, &sa) : NULL;
	struct ibv_qp *qp;

	if (srq == NULL)
		vt_die(EXIT_SETUP, "cq/srq: %s", strerror(errno));
	qp = make_qp(cq, srq, 16);
	if (ibv_modify_qp(qp, &err, IBV_QP_STATE) != 0)
		vt_die(EXIT_SETUP, "modify to ERR: %s", strerror(errno));
	/* 11.6.3.1 (o11-5.2.5): a QP on an SRQ reports its last WQE on entering Error. */
	expect_event(IBV_EVENT_QP_LAST_WQE_REACHED, qp);
	expect_no_more();
}

static void
case_cq_err(void)
{
	struct ibv_cq *cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	struct ibv_cq *rcq = cq != NULL ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp *tx, *rx;
	int i, n;

	if (rcq == NULL)
		vt_die(EXIT_SETUP, "cqs: %s", strerror(errno));
	/* tx completes into the small CQ, which is never polled; rx into its own. */
	tx = make_qp(cq, NULL, 64);
	rx = make_qp(rcq, NULL, 16);
	for (i = 0; i < 16; i++)
		if (ibv_post_recv(rx, &rwr, &bad) != 0)
			vt_die(EXIT_SETUP, "ibv_post_recv: %s", strerror(errno));
	connect_qp(tx, rx->qp_num);
	connect_qp(rx, tx->qp_num);
	/* More signalled sends than the CQ can hold (its real size is at least 4). */
	n = cq->cqe + 2;
	if (n > 16)
		vt_die(EXIT_SETUP, "CQ of 4 entries has %d", cq->cqe);
	post_sends(tx, n);
	expect_event(IBV_EVENT_CQ_ERR, cq);
	/* 11.4.2.1: the QPs completing into an overrun CQ are in error: their own event. */
	expect_event(IBV_EVENT_QP_FATAL, tx);
	expect_no_more();
}

int
main(int argc, char **argv)
{
	const char *which;

	if (argc > 1 && strcmp(argv[1], "--nonblock") == 0) {
		nonblock = true;
		argc--;
		argv++;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: verbs_async [--nonblock] "
			"srq_limit|forget|eintr|last_wqe|cq_err\n");
		return EXIT_SETUP;
	}
	which = argv[1];
	vt_init("verbs_async");
	open_device();
	if (strcmp(which, "srq_limit") == 0)
		case_srq_limit();
	else if (strcmp(which, "forget") == 0)
		case_forget();
	else if (strcmp(which, "eintr") == 0)
		case_eintr();
	else if (strcmp(which, "last_wqe") == 0)
		case_last_wqe();
	else if (strcmp(which, "cq_err") == 0)
		case_cq_err();
	else
		vt_die(EXIT_SETUP, "unknown case %s", which);
	printf("verbs_async %s%s: OK\n", which, nonblock ? " (non-blocking)" : "");
	return 0;
}
