/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droce-bench-droced: figures through droced, with the plain verbs API (libdroce), one per
 * run, for devtools/bench-droced.sh:
 *   qp-rate  QPs created and moved to RTS per second from one application thread
 *   lat      64-byte SEND ping-pong: half the round trip (server and client)
 *   bw       one RC QP streaming 64 KiB SENDs for a fixed time (server and client)
 * Server and client exchange QPN, PSN and GID over TCP (127.0.0.1 when both daemons are on
 * this machine). The program prints one "key=value ..." line that the script reads.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#define BENCH_PORT		18520
#define BENCH_PSN		0x1234
#define BENCH_LAT_SIZE		64
#define BENCH_BW_SIZE		65536
#define BENCH_BW_WINDOW		16	/* sends in flight */
#define BENCH_RECV_DEPTH	64
#define BENCH_POLL_TIMEOUT_S	10
#define BENCH_CHECK_MASK	0x3FF	/* look at the clock or the socket every 1024 */
#define BENCH_QP_BATCH		4000	/* < droced's 4096 doorbell slots per engine */
#define BENCH_QP_STEPS		4	/* create, INIT, RTR, RTS */

struct bench {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t size;
	union ibv_gid gid;
	uint8_t mtu;
};

struct peer_info {
	uint32_t qpn;
	uint32_t psn;
	uint8_t gid[16];
};

/* -y: sched_yield() after each empty poll, for machines with fewer CPUs than busy threads. */
static int yield_cpu;

static void
die(const char *what, int err)
{
	fprintf(stderr, "droce-bench-droced: %s: %s\n", what, strerror(err));
	exit(1);
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
bench_open(struct bench *b, size_t size, int cqe)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;

	if (list == NULL || list[0] == NULL)
		die("no RDMA device (is droced running? DROCE_SOCKET)", ENODEV);
	b->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (b->ctx == NULL)
		die("ibv_open_device", errno);
	if (ibv_query_port(b->ctx, 1, &pa) != 0)
		die("ibv_query_port", errno);
	b->mtu = pa.active_mtu;
	if (ibv_query_gid(b->ctx, 1, 0, &b->gid) != 0)
		die("ibv_query_gid", errno);
	b->pd = ibv_alloc_pd(b->ctx);
	b->cq = ibv_create_cq(b->ctx, cqe, NULL, NULL, 0);
	if (b->pd == NULL || b->cq == NULL)
		die("ibv_alloc_pd/ibv_create_cq", errno);
	b->size = size;
	if (size > 0) {
		if (posix_memalign((void **)&b->buf, 4096, size * 2) != 0)
			die("posix_memalign", ENOMEM);
		memset(b->buf, 0x5a, size * 2);
		b->mr = ibv_reg_mr(b->pd, b->buf, size * 2, IBV_ACCESS_LOCAL_WRITE);
		if (b->mr == NULL)
			die("ibv_reg_mr", errno);
	}
}

static struct ibv_qp *
qp_new(struct bench *b, uint32_t depth)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = b->cq, .recv_cq = b->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(b->pd, &ia);

	if (qp == NULL)
		die("ibv_create_qp", errno);
	return qp;
}

static void
qp_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	int rc;

	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (rc != 0)
		die("ibv_modify_qp(INIT)", rc);
}

static struct ibv_qp *
qp_create(struct bench *b, uint32_t depth)
{
	struct ibv_qp *qp = qp_new(b, depth);

	qp_init(qp);
	return qp;
}

static void
qp_rtr(struct bench *b, struct ibv_qp *qp, const struct peer_info *peer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = b->mtu, .dest_qp_num = peer->qpn,
		.rq_psn = peer->psn, .max_dest_rd_atomic = 0, .min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = 0, .hop_limit = 64 } },
	};
	int rc;

	memcpy(a.ah_attr.grh.dgid.raw, peer->gid, 16);
	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MIN_RNR_TIMER);
	if (rc != 0)
		die("ibv_modify_qp(RTR)", rc);
}

static void
qp_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = BENCH_PSN, .max_rd_atomic = 0,
	};
	int rc;

	rc = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			   IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc != 0)
		die("ibv_modify_qp(RTS)", rc);
}

static void
qp_connect(struct bench *b, struct ibv_qp *qp, const struct peer_info *peer)
{
	qp_rtr(b, qp, peer);
	qp_rts(qp);
}

/*
 * qp-rate: n QPs created and moved to RTS (each connected to itself), at most batch alive
 * at once (droced gives a client DROCE_SHM_DB_SLOTS doorbell slots per engine: 4096),
 * each batch destroyed before the next. Each verb is timed on its own too, so the script
 * can say which step the time goes to; destroying is timed apart from the rate.
 */
static void
run_qp_rate(uint32_t n, uint32_t batch)
{
	struct ibv_qp **qps = calloc(batch, sizeof(*qps));
	struct bench b = { 0 };
	struct peer_info self;
	double up = 0, down = 0, t, us[BENCH_QP_STEPS] = { 0 };
	uint32_t i, j, done;

	if (qps == NULL)
		die("calloc", ENOMEM);
	bench_open(&b, 0, 1024);
	memcpy(self.gid, b.gid.raw, 16);
	self.psn = BENCH_PSN;
	for (done = 0; done < n; done += j) {
		double t0 = now_s();

		for (j = 0; j < batch && done + j < n; j++) {
			t = now_s();
			qps[j] = qp_new(&b, 16);
			us[0] += now_s() - t;
			t = now_s();
			qp_init(qps[j]);
			us[1] += now_s() - t;
			self.qpn = qps[j]->qp_num;
			t = now_s();
			qp_rtr(&b, qps[j], &self);
			us[2] += now_s() - t;
			t = now_s();
			qp_rts(qps[j]);
			us[3] += now_s() - t;
		}
		t = now_s();
		up += t - t0;
		for (i = 0; i < j; i++) {
			int rc = ibv_destroy_qp(qps[i]);

			if (rc != 0)
				die("ibv_destroy_qp", rc);
		}
		down += now_s() - t;
	}
	/* Mean microseconds per call of each step. */
	printf("mode=qp-rate qps=%u batch=%u seconds=%.4f qps_per_sec=%.0f destroy_per_sec=%.0f "
	       "create_us=%.2f init_us=%.2f rtr_us=%.2f rts_us=%.2f destroy_us=%.2f\n",
	       n, batch, up, n / up, n / down, us[0] * 1e6 / n, us[1] * 1e6 / n,
	       us[2] * 1e6 / n, us[3] * 1e6 / n, down * 1e6 / n);
	free(qps);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(b.ctx);
}

/* ---- Two-sided modes ---- */

static int
tcp_exchange(const char *server, const struct peer_info *mine, struct peer_info *theirs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(BENCH_PORT) };
	int s, c = -1, one = 1;

	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		die("socket", errno);
	if (server == NULL) {
		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(s, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(s, 1) != 0)
			die("bind/listen", errno);
		c = accept(s, NULL, NULL);
		close(s);
	} else {
		double deadline = now_s() + BENCH_POLL_TIMEOUT_S;

		if (inet_pton(AF_INET, server, &sa.sin_addr) != 1)
			die("server address", EINVAL);
		while (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			if (now_s() > deadline)
				die("connect", errno);
			usleep(20000);
		}
		c = s;
	}
	if (c < 0)
		die("accept", errno);
	if (write(c, mine, sizeof(*mine)) != sizeof(*mine) ||
	    read(c, theirs, sizeof(*theirs)) != sizeof(*theirs))
		die("exchange", EIO);
	return c;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
post_recv(struct bench *b, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b->buf + b->size, .length = b->size,
			       .lkey = b->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int rc = ibv_post_recv(b->qp, &wr, &bad);

	if (rc != 0)
		die("ibv_post_recv", rc);
}

static void
post_send(struct bench *b, uint64_t id, bool signaled)
{
	struct ibv_sge sge = { .addr = (uintptr_t)b->buf, .length = b->size,
			       .lkey = b->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
	}, *bad;
	int rc = ibv_post_send(b->qp, &wr, &bad);

	if (rc != 0)
		die("ibv_post_send", rc);
}

/* One completion; dies on an error status or after BENCH_POLL_TIMEOUT_S. */
static void
poll_one(struct bench *b, struct ibv_wc *wc)
{
	double deadline = 0;
	uint32_t spins = 0;
	int n;

	while ((n = ibv_poll_cq(b->cq, 1, wc)) == 0) {
		if (yield_cpu)
			sched_yield();
		if ((++spins & 0xFFFF) == 0) {
			if (deadline == 0)
				deadline = now_s() + BENCH_POLL_TIMEOUT_S;
			else if (now_s() > deadline)
				die("no completion", ETIMEDOUT);
		}
	}
	if (n < 0)
		die("ibv_poll_cq", EIO);
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "droce-bench-droced: completion: %s\n",
			ibv_wc_status_str(wc->status));
		exit(1);
	}
}

/*
 * The ponger's poll: one completion (true), or false once the pinger's end message
 * arrives on sock (looked for every BENCH_CHECK_MASK + 1 empty polls).
 */
static bool
poll_or_end(struct bench *b, struct ibv_wc *wc, int sock)
{
	uint32_t spins = 0, total;
	int n;

	while ((n = ibv_poll_cq(b->cq, 1, wc)) == 0) {
		if (yield_cpu)
			sched_yield();
		if ((++spins & BENCH_CHECK_MASK) == 0) {
			ssize_t r = recv(sock, &total, sizeof(total), MSG_DONTWAIT);

			if (r == 0)
				die("client went away", EPIPE);
			if (r > 0)
				return false;
		}
	}
	if (n < 0)
		die("ibv_poll_cq", EIO);
	if (wc->status != IBV_WC_SUCCESS)
		die(ibv_wc_status_str(wc->status), EIO);
	return true;
}

static void
run_two_sided(const char *mode, const char *server, uint32_t iters, double duration)
{
	bool lat = strcmp(mode, "lat") == 0;
	struct bench b = { 0 };
	struct peer_info mine, theirs;
	struct ibv_wc wc;
	uint64_t sent = 0, done = 0, recvd = 0;
	double t0, t1;
	uint32_t i;
	int sock;
	char c = 0;

	bench_open(&b, lat ? BENCH_LAT_SIZE : BENCH_BW_SIZE, 4 * BENCH_RECV_DEPTH);
	b.qp = qp_create(&b, BENCH_RECV_DEPTH);
	for (i = 0; i < BENCH_RECV_DEPTH; i++)
		post_recv(&b, i);
	mine.qpn = b.qp->qp_num;
	mine.psn = BENCH_PSN;
	memcpy(mine.gid, b.gid.raw, 16);
	sock = tcp_exchange(server, &mine, &theirs);
	qp_connect(&b, b.qp, &theirs);
	/* Both sides in RTS before the first message: no RNR wait in the figures. */
	if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1)
		die("sync", EIO);

	if (lat) {
		/*
		 * The client pings, the server pongs; the client times up to iters round trips,
		 * for at most duration seconds, then tells the server how many over TCP.
		 * Send completions arrive in between and are only counted.
		 */
		double *rtt = server != NULL ? calloc(iters, sizeof(*rtt)) : NULL;
		uint32_t sends_out = 0, got;
		double ts = 0;

		if (server != NULL && rtt == NULL)
			die("calloc", ENOMEM);
		t0 = now_s();
		for (i = 0; i < iters; i++) {
			if (server != NULL) {
				if (i > 0 && now_s() - t0 > duration)
					break;
				ts = now_s();
				post_send(&b, 1, true);
				sends_out++;
			}
			for (;;) {
				if (server == NULL ? !poll_or_end(&b, &wc, sock) :
				    (poll_one(&b, &wc), false))
					goto pong_end;
				if (wc.opcode != IBV_WC_RECV) {
					sends_out--;
					continue;
				}
				if (rtt != NULL)
					rtt[i] = now_s() - ts;
				post_recv(&b, 0);
				break;
			}
			if (server == NULL) {
				post_send(&b, 1, true);
				sends_out++;
			}
		}
pong_end:
		t1 = now_s();
		got = i;
		if (server != NULL && write(sock, &got, sizeof(got)) != sizeof(got))
			die("lat end", EIO);
		while (sends_out > 0) {
			poll_one(&b, &wc);
			if (wc.opcode != IBV_WC_RECV)
				sends_out--;
		}
		if (server != NULL) {
			if (got == 0)
				die("no round trip", ETIMEDOUT);
			/* Mean over the whole run, and the median and 99th percentile. */
			qsort(rtt, got, sizeof(*rtt), cmp_double);
			printf("mode=lat size=%d iters=%u seconds=%.3f half_rtt_us=%.2f "
			       "half_rtt_us_median=%.2f half_rtt_us_p99=%.2f yield=%d\n",
			       BENCH_LAT_SIZE, got, t1 - t0, (t1 - t0) / got / 2 * 1e6,
			       rtt[got / 2] / 2 * 1e6, rtt[(uint64_t)got * 99 / 100] / 2 * 1e6,
			       yield_cpu);
		}
		free(rtt);
	} else if (server != NULL) {
		/* The client streams for duration seconds, then tells the server over TCP. */
		t0 = now_s();
		while (now_s() - t0 < duration) {
			while (sent - done < BENCH_BW_WINDOW)
				post_send(&b, sent++, true);
			poll_one(&b, &wc);
			done++;
		}
		while (done < sent) {
			poll_one(&b, &wc);
			done++;
		}
		t1 = now_s();
		printf("mode=bw size=%d msgs=%" PRIu64 " seconds=%.3f gbit_per_sec=%.2f\n",
		       BENCH_BW_SIZE, done, t1 - t0, done * (double)BENCH_BW_SIZE * 8 / (t1 - t0) / 1e9);
		if (write(sock, &done, sizeof(done)) != sizeof(done))
			die("bw end", EIO);
	} else {
		uint64_t total = 0;
		ssize_t r = 0;

		while (total == 0 || recvd < total) {
			struct ibv_wc w[16];
			int n = ibv_poll_cq(b.cq, 16, w);

			if (n < 0)
				die("ibv_poll_cq", EIO);
			if (n == 0 && yield_cpu)
				sched_yield();
			for (int k = 0; k < n; k++) {
				if (w[k].status != IBV_WC_SUCCESS)
					die(ibv_wc_status_str(w[k].status), EIO);
				recvd++;
				post_recv(&b, 0);
			}
			if (total == 0) {
				r = recv(sock, &total, sizeof(total), MSG_DONTWAIT);
				if (r == 0)
					die("client went away", EPIPE);
				if (r < 0)
					total = 0;
			}
		}
	}
	close(sock);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(b.mr);
	free(b.buf);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(b.ctx);
}

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: droce-bench-droced qp-rate [-n QPS] [-b BATCH]\n"
		"       droce-bench-droced lat|bw [-n ITERS] [-d SECONDS] [-y] [SERVER]\n"
		"Figures through droced (DROCE_SOCKET names the daemon). Without SERVER: the server\n"
		"side (waits on TCP port %d); with it: the client, which prints the figure.\n"
		"  -n  QPs (qp-rate, default 10000) or at most so many round trips (lat,\n"
		"      default 100000)\n"
		"  -b  QPs alive at once (qp-rate, default %d)\n"
		"  -d  seconds of streaming (bw) or at most of ping-pong (lat), default 2\n"
		"  -y  sched_yield() after every empty CQ poll (fewer CPUs than busy threads)\n",
		BENCH_PORT, BENCH_QP_BATCH);
}

int
main(int argc, char **argv)
{
	uint32_t n = 0, batch = BENCH_QP_BATCH;
	double duration = 2;
	const char *mode;
	int opt;

	if (argc < 2 || strcmp(argv[1], "--help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:b:d:y")) != -1) {
		switch (opt) {
		case 'n':
			n = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'b':
			batch = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'd':
			duration = strtod(optarg, NULL);
			break;
		case 'y':
			yield_cpu = 1;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (strcmp(mode, "qp-rate") == 0)
		run_qp_rate(n ? n : 10000, batch ? batch : 1);
	else if (strcmp(mode, "lat") == 0 || strcmp(mode, "bw") == 0)
		run_two_sided(mode, optind < argc ? argv[optind] : NULL, n ? n : 100000, duration);
	else {
		usage(stderr);
		return 2;
	}
	return 0;
}
