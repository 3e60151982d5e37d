/* SPDX-License-Identifier: BSD-3-Clause */

/*
 * droced: the dataplane daemon. Reads its configuration before EAL exists (a bad file
 * stops it with the file's own "FILE:LINE: message"), starts EAL with the lcores the
 * engines need, brings up the ports and one engine per configured lcore, and then runs the
 * control thread on the main lcore until SIGINT or SIGTERM. Shut-down tells every client,
 * tears down what they own while the engines still run (engines apply the QP commands),
 * then stops the engines, the ports and EAL, and removes the runtime files.
 */

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "droced_loc.h"

RTE_LOG_REGISTER(droced_logtype, droce.droced, NOTICE);

/*
 * The device's QPN table holds every client's QPs: at least this many entries, however
 * small the per-client limit is.
 */
#define DROCED_DEV_MIN_QPS	65536
#define DROCED_DEV_MAX_QPS	(1u << 24)

static struct droced droced;

static int
engines_start(struct droced *d)
{
	struct droce_engine_dev_conf dc;
	uint32_t i, qps;

	qps = rte_align32pow2(RTE_MAX(d->cfg.limits.max_qps + 2, (uint32_t)DROCED_DEV_MIN_QPS));
	dc.max_qps = RTE_MIN(qps, DROCED_DEV_MAX_QPS);
	d->dev = droce_engine_dev_create(&dc);
	if (d->dev == NULL) {
		DROCED_LOG(ERR, "cannot create the device: %s", rte_strerror(rte_errno));
		return -1;
	}
	for (i = 0; i < d->cfg.nb_lcores; i++) {
		struct droce_engine_conf ec;

		droced_port_engine_conf(d, i, &ec);
		d->engines[i] = droce_engine_create(d->dev, i, &ec);
		if (d->engines[i] == NULL) {
			DROCED_LOG(ERR, "engine %u: %s", i, rte_strerror(rte_errno));
			return -1;
		}
		d->nb_engines++;
	}
	for (i = 0; i < d->nb_engines; i++) {
		int rc = rte_eal_remote_launch(droce_engine_run, d->engines[i], d->cfg.lcores[i]);

		if (rc != 0) {
			DROCED_LOG(ERR, "engine %u: cannot launch on lcore %u: %s", i,
				   d->cfg.lcores[i], strerror(-rc));
			return -1;
		}
		d->launched[i] = true;
	}
	return 0;
}

/*
 * At the stop, an engine's non-zero counters on one line ("droced: engine 0 counters:
 * rx_pkts=12 ..."): what it did over the daemon's life, for whoever reads the log (the
 * tests count retransmissions and sleeps there).
 */
static void
engine_counters_log(const struct droce_engine *e, uint32_t id)
{
	char line[4096] = "";
	FILE *f = fmemopen(line, sizeof(line), "w");

	if (f != NULL) {
		droce_engine_stats_print(f, e);
		fclose(f);
	}
	DROCED_LOG(NOTICE, "engine %u counters:%s", id, line[0] == '\0' ? " none" : line);
}

static void
engines_stop(struct droced *d)
{
	uint32_t i;

	for (i = 0; i < d->nb_engines; i++) {
		if (!d->launched[i])
			continue;
		droce_engine_stop(d->engines[i]);
		rte_eal_wait_lcore(d->cfg.lcores[i]);
		d->launched[i] = false;
	}
	for (i = 0; i < d->nb_engines; i++) {
		engine_counters_log(d->engines[i], i);
		droce_engine_destroy(d->engines[i]);
	}
	d->nb_engines = 0;
	droce_engine_dev_destroy(d->dev);
	d->dev = NULL;
}

/* The engines must be enabled lcores other than the main one (the control thread). */
static int
lcores_check(const struct droced *d)
{
	uint32_t i;

	for (i = 0; i < d->cfg.nb_lcores; i++) {
		uint32_t lc = d->cfg.lcores[i];

		if (lc == rte_get_main_lcore() || !rte_lcore_is_enabled(lc)) {
			DROCED_LOG(ERR, "[engines] lcore %u is %s", lc,
				   lc == rte_get_main_lcore() ? "the main lcore (control thread)" :
				   "not enabled by the EAL arguments");
			return -1;
		}
	}
	return 0;
}

static int
remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	RTE_SET_USED(sb);
	RTE_SET_USED(flag);
	RTE_SET_USED(ftw);
	return remove(path);
}

/* rte_eal_cleanup() leaves the runtime directory (config, telemetry socket) behind. */
static void
eal_fini(void)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
	droce_engine_eal_cleanup();
	nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* More descriptors than the default 1024: every CQ with a channel holds an eventfd. */
static void
raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* Both users of an address resolution: parked client requests and rdma_cm ids. */
static void
port_resolved(struct droced_port *p, uint32_t ip, int status)
{
	droced_client_resolved(p, ip, status);
	droced_rdmacm_resolved(p, ip, status);
}

/*
 * The calls that go up droced's layers (layers.txt), as callbacks registered here, the
 * top: the ports tell the clients, the CM and QP1 what they see; QP1 hands CM MADs to the
 * CM's wire side; that tells the rdma_cm side what happened to a connection.
 */
static void
wire_layers(void)
{
	static const struct droced_port_hooks port_hooks = {
		.resolved = port_resolved,
		.link = droced_clients_port_event,
		.qp1_rx = droced_gsi_rx,
		.qp1_flush = droced_gsi_flush,
	};
	static const struct droced_ibcm_hooks wire_hooks = {
		.conn_event = droced_rdmacm_conn_event,
		.req_listener = droced_rdmacm_req_listener,
		.id_attach = droced_rdmacm_id_attach,
	};

	droced_ports_set_hooks(&port_hooks);
	droced_gsi_set_handler(droced_ibcm_mad_input);
	droced_ibcm_set_hooks(&wire_hooks);
}

int
main(int argc, char **argv)
{
	struct droced *d = &droced;
	struct droced_args args;
	char err[2 * PATH_MAX];
	char **eal_argv;
	sigset_t sigs;
	int eal_argc, rc, status = EXIT_FAILURE;

	if (droced_log_init() != 0) {
		fprintf(stderr, "droced: cannot set up its log\n");
		return EXIT_FAILURE;
	}
	rc = droced_args_parse(argc, argv, &args);
	if (rc != 0)
		return rc > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	if (args.config == NULL)
		droced_config_builtin(&d->cfg);
	else if (droced_config_load(args.config, &d->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "droced: %s\n", err);
		return EXIT_FAILURE;
	}
	if (d->cfg.nb_lcores < d->cfg.nb_ports) {
		fprintf(stderr, "droced: %s: [engines] lcores names %u engines for %u ports: "
			"each port needs one\n", args.config != NULL ? args.config :
			"built-in configuration", d->cfg.nb_lcores, d->cfg.nb_ports);
		return EXIT_FAILURE;
	}
	if (droced_args_instance(&args, &d->cfg) != 0 ||
	    droced_args_eal(&d->cfg, argc, argv, &eal_argv, &eal_argc) != 0 ||
	    droced_args_prefix_free(&d->cfg, argc, argv) != 0)
		return EXIT_FAILURE;
	/*
	 * Blocked before EAL starts its threads, which inherit the mask: the signals then reach
	 * only the control thread's signalfd, never an engine.
	 */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();
	/*
	 * The control thread sleeps briefly while an engine applies a command (modify, destroy):
	 * with the default 50 us timer slack each such sleep costs that much, which is most of
	 * a QP's set-up time. Threads inherit it, so set it before EAL starts the engines.
	 */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	if (rte_eal_init(eal_argc, eal_argv) < 0) {
		fprintf(stderr, "droced: EAL initialisation failed: %s\n", rte_strerror(rte_errno));
		return EXIT_FAILURE;
	}
	d->start_ms = droced_now_ms();
	TAILQ_INIT(&d->clients);
	wire_layers();
	d->epfd = d->lsock = d->sigfd = d->timerfd = d->wake_fd = d->call_fd = -1;
	if (lcores_check(d) == 0 && droced_log_queue() == 0 && droced_ports_init(d) == 0 &&
	    engines_start(d) == 0 &&
	    droced_ports_announce(d) == 0 && droced_loop_init(d) == 0 &&
	    droced_telemetry_init(d) == 0 && droced_metrics_init(d) == 0) {
		droced_devnodes_init(d->nb_ports);
		/* Last: the line programs and tests wait for, with everything up. */
		DROCED_LOG(NOTICE, "ready, socket %s", d->cfg.socket);
		if (droced_loop_run(d) == 0)
			status = EXIT_SUCCESS;
	}
	DROCED_LOG(NOTICE, "shutting down");
	droced_devnodes_fini();
	/* Clients first: destroying their QPs needs the engines running. */
	droced_loop_fini(d);
	droced_metrics_fini();
	if (d->dev != NULL)
		engines_stop(d);
	droced_log_fini();
	droced_ports_fini(d);
	eal_fini();
	return status;
}
