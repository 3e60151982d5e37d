/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the small verbs test programs (verbs_test_util.h). */

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs_test_util.h"

#define VT_EXIT_SETUP	1

static const char *vt_name = "verbs_test";
/* Read by the signal handler: set before the alarm is armed. */
static volatile sig_atomic_t vt_watch_status;

void
vt_init(const char *name)
{
	vt_name = name;
}

void
vt_die(int status, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", vt_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

static void
vt_on_alarm(int sig)
{
	static const char msg[] = ": a verb blocked where it must answer at once\n";

	(void)sig;
	/* Only async-signal-safe calls here. */
	if (write(STDERR_FILENO, vt_name, strlen(vt_name)) < 0 ||
	    write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(vt_watch_status);
	_exit(vt_watch_status);
}

void
vt_watch(unsigned int seconds, int status)
{
	vt_watch_status = status;
	signal(SIGALRM, vt_on_alarm);
	alarm(seconds);
}

void
vt_unwatch(void)
{
	alarm(0);
}

struct ibv_context *
vt_open_first(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0)
		vt_die(VT_EXIT_SETUP, "no verbs device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (ctx == NULL)
		vt_die(VT_EXIT_SETUP, "ibv_open_device: %s", strerror(errno));
	return ctx;
}

void
vt_qp_init(struct ibv_qp *qp, unsigned int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = access,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) != 0)
		vt_die(VT_EXIT_SETUP, "modify to INIT: %s", strerror(errno));
}

void
vt_qp_connect(struct ibv_qp *qp, uint32_t dqpn, uint8_t timeout)
{
	struct ibv_qp_attr a;
	union ibv_gid gid;

	if (ibv_query_gid(qp->context, 1, 0, &gid) != 0)
		vt_die(VT_EXIT_SETUP, "ibv_query_gid: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER) != 0)
		vt_die(VT_EXIT_SETUP, "modify to RTR: %s", strerror(errno));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0)
		vt_die(VT_EXIT_SETUP, "modify to RTS: %s", strerror(errno));
}
