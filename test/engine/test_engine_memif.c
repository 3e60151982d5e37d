/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Two processes joined by net_memif, one engine each, with drivers/net/fault on both
 * receive sides: RC streams from the parent (memif server) to the child (memif client)
 * arrive exactly once, in order, byte-exact. The child is a fork of this test, so this
 * executable holds this one test only: a check failing in the child ends the child.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "droce_test.h"
#include "engine_stream.h"

#define NB_QPS		2
#define NB_MSGS		2000
#define FAULTS		"drop=10000,dup=5000,reorder=5000,corrupt=5000"
#define CHILD_WAIT_S	120

static void
wait_link_up(uint16_t port)
{
	struct rte_eth_link link;
	int i;

	for (i = 0; i < 10000; i++) {
		memset(&link, 0, sizeof(link));
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status)
			return;
		usleep(1000);
	}
	droce_test_fail(__FILE__, __LINE__, "memif link did not come up");
}

/* Both processes make their QPs in the same order, so QPN q is the same on both sides. */
/*
 * One end of the link, opened into *hp and left open: the receiver closes its end first,
 * the sender only after the receiver's process is gone, since DPDK 22.11's memif handles
 * a peer's disconnect on the interrupt thread and crashes if its own port is being
 * closed at the same time.
 */
static void
side(struct tc_host *hp, bool sender, const char *sock, uint32_t seed, int ready_fd,
     int done_fd)
{
	struct tc_path path = { .mtu = IBV_MTU_4096, .timeout = 12, .retry_cnt = 7,
				.rnr_retry = 7, .min_rnr_timer = 1 };
	struct tc_qp_init in = { .type = DROCE_SHM_QPT_RC, .sq_size = 64, .rq_size = 64,
				 .max_sge = 2, .max_inline = 64 };
	struct es_stream st[NB_QPS];
	struct tc_qp *qp[NB_QPS];
	char args[256], fault[128], pname[RTE_ETH_NAME_MAX_LEN];
	struct tc_cq *cq;
	uint32_t q;

	if (!sender) {
		/* A memif client connects once, at start: the server must be listening. */
		int i;

		for (i = 0; i < 10000 && access(sock, F_OK) != 0; i++)
			usleep(1000);
		CHECK(access(sock, F_OK) == 0);
	}
	/*
	 * bsize 8192: one memif buffer per packet. With smaller buffers DPDK 22.11's memif
	 * hands over chained packets with wrong lengths (seen as bad ICRCs here).
	 */
	snprintf(args, sizeof(args), "role=%s,id=0,socket=%s,socket-abstract=no,"
		 "bsize=8192", sender ? "server" : "client", sock);
	tc_host_open_vdev(hp, sender ? "a" : "b", "net_memif0", args, 1, sender ? 1 : 2,
			  sender ? 2 : 1);
	CHECK(rte_eth_dev_get_name_by_port(hp->port, pname) == 0);
	snprintf(fault, sizeof(fault), "port=%s,seed=%u,%s", pname, seed, FAULTS);
	hp->fault = droce_fault_attach(fault);
	CHECK(hp->fault != NULL);
	wait_link_up(hp->port);
	cq = tc_cq_create(hp, 1024);
	in.scq = in.rcq = cq;
	for (q = 0; q < NB_QPS; q++)
		qp[q] = tc_qp_create(hp, &in);
	for (q = 0; q < NB_QPS; q++) {
		/* Both sides send from and expect the same PSN: one stream flows. */
		path.psn_a = path.psn_b = 1000 * q;
		tc_connect_remote(qp[q], qp[q]->qpn, sender ? 2 : 1, &path);
		es_init(&st[q], q, NB_MSGS, sender ? qp[q] : NULL, sender ? NULL : qp[q], qp[q]->qpn);
	}
	if (sender) {
		/* Start once the receiver's QPs are ready: else the first tries are lost. */
		struct pollfd pfd = { .fd = ready_fd, .events = POLLIN };
		char c;

		CHECK(poll(&pfd, 1, CHILD_WAIT_S * 1000) == 1 && read(ready_fd, &c, 1) == 1);
	} else {
		CHECK(write(ready_fd, "r", 1) == 1);
	}
	es_run(st, NB_QPS, sender ? cq : NULL, sender ? NULL : cq, 100);
	if (sender) {
		/* Everything acknowledged: the receiver may go. */
		CHECK(write(done_fd, "x", 1) == 1);
	} else {
		/* Keep answering (lost ACKs are re-earned from duplicates) until the sender is done. */
		struct pollfd pfd = { .fd = done_fd, .events = POLLIN };
		char c;

		CHECK(poll(&pfd, 1, CHILD_WAIT_S * 1000) == 1 && read(done_fd, &c, 1) == 1);
	}
	printf("  %s: %llu request packets, %llu retransmitted, %llu timeouts, "
	       "%llu malformed received\n", sender ? "server (sender)" : "client (receiver)",
	       (unsigned long long)tc_counter(hp, "req_pkts"),
	       (unsigned long long)tc_counter(hp, "req_retransmit"),
	       (unsigned long long)tc_counter(hp, "req_timeout"),
	       (unsigned long long)tc_counter(hp, "rx_malformed"));
}

DROCE_TEST(rc_streams_between_two_processes_over_memif)
{
	char sock[128];
	int ready[2], done[2], status = -1;
	struct tc_host h;
	time_t end;
	pid_t child;

	snprintf(sock, sizeof(sock), "/tmp/droce-memif-%d.sock", (int)getpid());
	unlink(sock);
	CHECK(pipe(ready) == 0 && pipe(done) == 0);
	fflush(stdout);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		/* The child dies with its parent, whatever happens to the parent. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(done[1]);
		close(ready[0]);
		side(&h, false, sock, 11, ready[1], done[0]);
		tc_host_close(&h);
		fflush(stdout);
		/* exit, not _exit: the EAL cleanup (atexit) removes this process's runtime files. */
		exit(0);
	}
	close(done[0]);
	close(ready[1]);
	side(&h, true, sock, 10, ready[0], done[1]);
	close(done[1]);
	close(ready[0]);
	end = time(NULL) + 30;
	while (waitpid(child, &status, WNOHANG) == 0) {
		if (time(NULL) > end) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			break;
		}
		usleep(10000);
	}
	tc_host_close(&h);
	unlink(sock);
	if (time(NULL) > end)
		droce_test_fail(__FILE__, __LINE__, "receiver process did not finish");
	if (WIFSIGNALED(status))
		droce_test_fail(__FILE__, __LINE__, "receiver process killed by signal %d",
				WTERMSIG(status));
	CHECK(WIFEXITED(status));
	CHECK_EQ_I64(WEXITSTATUS(status), 0);
}
