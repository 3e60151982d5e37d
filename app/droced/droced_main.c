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

#define ARGS_MAX	(2 * DROCED_CONFIG_VALUE_MAX + 64)
#define LCORES_ARG_MAX	4096
#define CPUSET_STR_MAX	1024
/*
 * The device's QPN table holds every client's QPs: at least this many entries, however
 * small the per-client limit is.
 */
#define DROCED_DEV_MIN_QPS	65536
#define DROCED_DEV_MAX_QPS	(1u << 24)

static struct droced droced;

static void
usage(const char *prog)
{
	printf("Usage: %s [EAL options] [--] [--config FILE]\n"
	       "  --config FILE  droced's configuration (doc/configuration.md); without it\n"
	       "                 droced runs on a built-in net_ring0 link (config/default.ini)\n"
	       "  --help         this text\n"
	       "EAL options may also come from the file's [eal] args; the command line is\n"
	       "given to EAL after them, so it wins. Unless -l, -c or --lcores is given,\n"
	       "droced maps the main lcore and every engine lcore onto the CPUs it may use.\n",
	       prog);
}

/* "0-1" or "0,2-3": the CPUs this process may run on, in --lcores' cpu_set syntax. */
static int
cpuset_string(char *buf, size_t len)
{
	cpu_set_t set;
	size_t out = 0;
	int cpu, first = -1, n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -errno;
	buf[0] = '\0';
	for (cpu = 0; cpu <= CPU_SETSIZE; cpu++) {
		bool in = cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set);

		if (in && first < 0)
			first = cpu;
		if (in || first < 0)
			continue;
		n = first == cpu - 1 ?
			snprintf(buf + out, len - out, "%s%d", out ? "," : "", first) :
			snprintf(buf + out, len - out, "%s%d-%d", out ? "," : "", first, cpu - 1);
		if (n < 0 || (size_t)n >= len - out)
			return -ENOSPC;
		out += n;
		first = -1;
	}
	return out > 0 ? 0 : -ENOENT;
}

static bool
user_sets_lcores(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "-l", 2) == 0 || strncmp(a, "-c", 2) == 0 ||
		    strncmp(a, "--lcores", strlen("--lcores")) == 0)
			return true;
	}
	return false;
}

/* Does an EAL option starting with opt appear in the file's args or on the command line? */
static bool
args_have(const struct droced_config *cfg, int argc, char **argv, const char *opt)
{
	const char *w = cfg->eal_args;
	uint32_t k;
	int i;

	for (k = 0; k < cfg->nb_eal_args; k++, w += strlen(w) + 1)
		if (strncmp(w, opt, strlen(opt)) == 0)
			return true;
	for (i = 1; i < argc; i++)
		if (strncmp(argv[i], opt, strlen(opt)) == 0)
			return true;
	return false;
}

/* The main lcore: the lowest id no engine uses. */
static uint32_t
main_lcore_pick(const struct droced_config *cfg)
{
	uint32_t lc, i;

	for (lc = 0;; lc++) {
		for (i = 0; i < cfg->nb_lcores; i++)
			if (cfg->lcores[i] == lc)
				break;
		if (i == cfg->nb_lcores)
			return lc;
	}
}

/*
 * EAL's arguments: the program name, the file's [eal] args, the command line without
 * --config (and without the "--" that may precede it), and, unless the user placed lcores
 * himself, the lcore mapping: every lcore floats over all our CPUs, so a configuration
 * naming lcore 2 runs on a 2-CPU machine.
 */
static int
eal_args_build(const struct droced_config *cfg, int argc, char **argv, char **out, int *nout,
	       char *lcores_arg, char *main_arg)
{
	char cpus[CPUSET_STR_MAX];
	const char *w = cfg->eal_args;
	int n = 0, i;
	uint32_t k;

	out[n++] = argv[0];
	/*
	 * Hugepage files unlinked once mapped: droced has no secondary processes, and nothing
	 * is left in /dev/hugepages however it ends. Later arguments may say otherwise.
	 */
	if (!args_have(cfg, argc, argv, "--no-huge") && !args_have(cfg, argc, argv, "--in-memory") &&
	    !args_have(cfg, argc, argv, "--huge-unlink"))
		out[n++] = (char *)(uintptr_t)"--huge-unlink";
	for (k = 0; k < cfg->nb_eal_args; k++) {
		out[n++] = (char *)(uintptr_t)w;
		w += strlen(w) + 1;
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0) {
			i++;
			continue;
		}
		if (strncmp(argv[i], "--config=", strlen("--config=")) == 0 ||
		    strcmp(argv[i], "--") == 0)
			continue;
		if (n >= ARGS_MAX - 3)
			return -E2BIG;
		out[n++] = argv[i];
	}
	if (!user_sets_lcores(n, out)) {
		uint32_t main_lc = main_lcore_pick(cfg);
		size_t len;

		if (cpuset_string(cpus, sizeof(cpus)) != 0)
			return -ENOENT;
		len = snprintf(lcores_arg, LCORES_ARG_MAX, "--lcores=%u@(%s)", main_lc, cpus);
		for (k = 0; k < cfg->nb_lcores && len < LCORES_ARG_MAX; k++)
			len += snprintf(lcores_arg + len, LCORES_ARG_MAX - len, ",%u@(%s)",
					cfg->lcores[k], cpus);
		if (len >= LCORES_ARG_MAX)
			return -E2BIG;
		snprintf(main_arg, LCORES_ARG_MAX, "--main-lcore=%u", main_lc);
		out[n++] = lcores_arg;
		out[n++] = main_arg;
	}
	out[n] = NULL;
	*nout = n;
	return 0;
}

/* --config FILE / --config=FILE anywhere on the line; NULL: the built-in configuration. */
static int
config_path(int argc, char **argv, const char **path)
{
	int i;

	*path = NULL;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			usage(argv[0]);
			exit(EXIT_SUCCESS);
		}
		if (strcmp(argv[i], "--config") == 0) {
			if (i + 1 >= argc) {
				fprintf(stderr, "droced: --config needs a file\n");
				return -1;
			}
			*path = argv[++i];
		} else if (strncmp(argv[i], "--config=", strlen("--config=")) == 0) {
			*path = argv[i] + strlen("--config=");
		}
	}
	return 0;
}

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
	static char *eal_argv[ARGS_MAX + 1];
	static char lcores_arg[LCORES_ARG_MAX], main_arg[LCORES_ARG_MAX];
	struct droced *d = &droced;
	char err[2 * PATH_MAX];
	const char *path;
	sigset_t sigs;
	int eal_argc, rc, status = EXIT_FAILURE;

	if (config_path(argc, argv, &path) != 0)
		return EXIT_FAILURE;
	if (path == NULL)
		droced_config_builtin(&d->cfg);
	else if (droced_config_load(path, &d->cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "droced: %s\n", err);
		return EXIT_FAILURE;
	}
	if (d->cfg.nb_lcores < d->cfg.nb_ports) {
		fprintf(stderr, "droced: %s: [engines] lcores names %u engines for %u ports: "
			"each port needs one\n", path != NULL ? path : "built-in configuration",
			d->cfg.nb_lcores, d->cfg.nb_ports);
		return EXIT_FAILURE;
	}
	rc = eal_args_build(&d->cfg, argc, argv, eal_argv, &eal_argc, lcores_arg, main_arg);
	if (rc != 0) {
		fprintf(stderr, "droced: cannot build EAL arguments: %s\n", strerror(-rc));
		return EXIT_FAILURE;
	}
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
	d->epfd = d->lsock = d->sigfd = d->timerfd = d->wake_fd = -1;
	if (lcores_check(d) == 0 && droced_ports_init(d) == 0 && engines_start(d) == 0 &&
	    droced_ports_announce(d) == 0 && droced_loop_init(d) == 0) {
		droced_devnodes_init(d->nb_ports);
		if (droced_loop_run(d) == 0)
			status = EXIT_SUCCESS;
	}
	DROCED_LOG(NOTICE, "shutting down");
	droced_devnodes_fini();
	/* Clients first: destroying their QPs needs the engines running. */
	droced_loop_fini(d);
	if (d->dev != NULL)
		engines_stop(d);
	droced_ports_fini(d);
	eal_fini();
	return status;
}
