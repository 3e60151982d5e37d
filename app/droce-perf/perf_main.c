/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf's main, the top of its layers (layers.txt): the EAL, the options, the hosts
 * (perf_host.c), then one run of every size (perf_run.c), the prompt (perf_prompt.c) or
 * --stats-period's run (perf_control.c); SIGINT and SIGTERM stop the run. Nothing calls
 * into this file.
 */
#include <execinfo.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_log.h>

#include "perf.h"

static struct perf_run *signal_run;

static void
on_signal(int sig)
{
	(void)sig;
	if (signal_run != NULL) {
		__atomic_store_n(&signal_run->interrupted, true, __ATOMIC_RELAXED);
		__atomic_store_n(&signal_run->stop, true, __ATOMIC_RELAXED);
	}
}

/*
 * A crash prints its stack to stderr before the default action: a test that sees exit -11
 * once in a hundred runs then says where. backtrace() is not async-signal-safe until
 * libgcc is loaded, so crash_catch calls it once first.
 */
static void
on_crash(int sig)
{
	static const char head[] = "droce-perf: fatal signal; stack:\n";
	void *frames[64];
	int n;

	if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0)
		_exit(128 + sig);
	n = backtrace(frames, RTE_DIM(frames));
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	raise(sig);	/* SA_RESETHAND: the default action now */
}

static void
crash_catch(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
	struct sigaction sa;
	void *frame;
	size_t i;

	(void)backtrace(&frame, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	for (i = 0; i < RTE_DIM(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* No SA_RESTART: a read of the prompt's ends with EINTR and the prompt looks at the flag. */
static void
signals_catch(struct perf_run *r)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	signal_run = r;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * EAL logs go to stderr: stdout holds only the results (and --json's lines).
 * Exit status: 0 figures printed, 1 the run failed, 2 bad arguments, 3 EAL did not start.
 */
int
main(int argc, char **argv)
{
	struct perf_opts o;
	struct perf_run *r;
	char rundir[PATH_MAX];
	int n, ret, rc = 1;

	crash_catch();
	rte_openlog_stream(stderr);
	n = rte_eal_init(argc, argv);
	if (n < 0) {
		fprintf(stderr, "droce-perf: EAL: %s\n", rte_strerror(rte_errno));
		return 3;
	}
	argv[n] = argv[0];
	ret = perf_opts_parse(argc - n, argv + n, &o);
	if (ret != 0) {
		rc = ret > 0 ? 0 : 2;
		goto out;
	}
	/* The prompt and the periodic statistics run traffic on a worker lcore (perf_prompt.c). */
	if ((o.interactive || o.stats_period != 0) && rte_lcore_count() < 2) {
		fprintf(stderr, "droce-perf: %s needs two lcores on the EAL line (-l 0,1): the run "
			"goes on the second while the main lcore %s\n",
			o.interactive ? "-i" : "--stats-period",
			o.interactive ? "reads commands" : "prints statistics");
		rc = 2;
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		goto out;
	r->o = &o;
	r->opened = o;
	r->max_size = perf_largest_size(&o);
	/* two lcores, neither -i nor --stats-period: host b on the worker (perf_lcores.c) */
	r->a_lcore = r->b_lcore = rte_get_main_lcore();
	if (o.role == PERF_ROLE_BOTH && !o.interactive && o.stats_period == 0 &&
	    rte_lcore_count() >= 2)
		r->b_lcore = rte_get_next_lcore(-1, 1, 0);
	if (perf_hosts_open(r, &o) != 0)
		goto close;
	signals_catch(r);
	if (o.interactive) {
		rc = perf_prompt(r, &o);
		goto close;
	}
	if (o.stats_period != 0) {
		rc = perf_periodic(r, &o);
		goto close;
	}
	perf_report_header(r);
	rc = perf_run_sizes(r) == 0 ? 0 : 1;
	perf_report_footer(r);
	perf_report_ports(r);
	perf_report_faults(r);
	if (rc == 0 && r->remote != NULL && perf_hosts_peer_close(r) != 0)
		rc = 1;
close:
	perf_cc_free(r);
	fflush(stdout);
	signal_run = NULL;
	perf_hosts_close(r, rc != 0);
	free(r);
out:
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	droce_engine_eal_cleanup();
	/* The runtime directory outlives the EAL even without shared files. */
	rmdir(rundir);
	return rc;
}
